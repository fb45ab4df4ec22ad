//! The token `session serve` makes when it is given none: random, kept in a file only the
//! user can read, and reused by the next server so that clients keep working.
//!
//! Reuse matters twice: two servers started from the same data folder share one token instead
//! of overwriting each other's file, and a client configured with the token survives a
//! restart. Deleting the file makes the next server choose a new one.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};

/// The file name of the token, in the data folder (`$XDG_DATA_HOME/session`).
pub const TOKEN_FILE: &str = "server.token";

/// Random bytes in a token (256 bits).
const TOKEN_BYTES: usize = 32;

/// The token file of the data folder `data_dir`.
pub fn token_path(data_dir: &Path) -> PathBuf {
    data_dir.join(TOKEN_FILE)
}

/// The token in `path`, made and written (mode 0600) when the file is missing, unreadable as
/// a token, or readable by others than the user.
pub fn load_or_create(path: &Path) -> Result<String> {
    let dir = path.parent().ok_or_else(|| anyhow!("{}: not a file path", path.display()))?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Two rounds at most: a file that another server wrote between our look and our write
    // is read on the second.
    for _ in 0..2 {
        match read_private(path)? {
            Found::Token(token) => return Ok(token),
            Found::Missing => {}
            Found::Unusable(why) => {
                tracing::warn!(path = %path.display(), why, "replacing the server token file");
                std::fs::remove_file(path)
                    .with_context(|| format!("cannot replace {} ({why})", path.display()))?;
            }
        }
        let token = generate()?;
        if write_new(dir, path, &token)? {
            return Ok(token);
        }
    }
    Err(anyhow!("{}: another process keeps replacing the token file", path.display()))
}

/// What the token file holds.
enum Found {
    Token(String),
    Missing,
    Unusable(&'static str),
}

fn read_private(path: &Path) -> Result<Found> {
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Missing),
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", path.display())),
    };
    if !metadata.is_file() {
        return Ok(Found::Unusable("it is not a regular file"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        // Others may have read it already: a new token is the only safe answer.
        if metadata.permissions().mode() & 0o077 != 0 {
            return Ok(Found::Unusable("others than its owner could read it"));
        }
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let token = text.trim();
    let well_formed = token.len() >= TOKEN_BYTES && token.bytes().all(|b| b.is_ascii_graphic());
    Ok(if well_formed { Found::Token(token.to_owned()) } else { Found::Unusable("it holds no token") })
}

/// A new token: [`TOKEN_BYTES`] from the operating system's CSPRNG, as hex.
fn generate() -> Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(|error| anyhow!("cannot get random bytes for the token: {error}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `token` to `path` unless the file exists; whether it was written.
fn write_new(dir: &Path, path: &Path, token: &str) -> Result<bool> {
    let mut file = tempfile::Builder::new();
    file.prefix(".server.token.");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        file.permissions(std::fs::Permissions::from_mode(0o600));
    }
    let mut file = file.tempfile_in(dir).with_context(|| format!("cannot write in {}", dir.display()))?;
    writeln!(file, "{token}")
        .and_then(|()| file.as_file().sync_all())
        .with_context(|| format!("cannot write the token to {}", file.path().display()))?;
    match file.persist_noclobber(path) {
        Ok(_) => Ok(true),
        Err(error) if error.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(error) => Err(error.error).with_context(|| format!("cannot write {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_made_once_kept_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = token_path(&dir.path().join("session"));
        let token = load_or_create(&path).unwrap();
        assert_eq!(token.len(), 2 * TOKEN_BYTES);
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(load_or_create(&path).unwrap(), token);
        assert_ne!(generate().unwrap(), token);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
            // A file others could read is replaced with a new token.
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let replaced = load_or_create(&path).unwrap();
            assert_ne!(replaced, token);
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        // So is one that holds no token.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "short\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        assert_ne!(load_or_create(&path).unwrap(), "short");
    }
}

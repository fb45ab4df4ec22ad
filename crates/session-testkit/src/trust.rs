//! Marking a test project trusted, as `session trust` would: test projects put their mock
//! provider's endpoint in the project config, which applies only in a trusted folder.

use std::path::Path;

/// Writes `<home>/.config/session/trusted.json` trusting `folder` (the file `session trust`
/// keeps).
pub fn trust_folder(home: &Path, folder: &Path) -> std::io::Result<()> {
    let dir = home.join(".config").join("session");
    std::fs::create_dir_all(&dir)?;
    let folder = folder.canonicalize()?;
    let list = serde_json::json!({"trusted": [folder], "declined": []});
    std::fs::write(dir.join("trusted.json"), list.to_string())
}

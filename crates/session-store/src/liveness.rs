//! Whether the process holding a lease still lives, when it ran on this machine.
//!
//! A lease lasts its time-to-live (30 s by default) unless its owner releases it. A run killed
//! with SIGKILL releases nothing, so without more facts its session stays locked, and its tool
//! calls stay "running", until the lease expires. To tell a dead local owner at once, an owner
//! id names its process: `pid<PID>-<token>`, followed on Linux by `@<boot id>.<start ticks>`
//! (the kernel's boot id and the process's start time in clock ticks since boot). A lease whose
//! owner ran during this boot, and whose pid is gone, a zombie, or now a different process
//! (another start time), is treated as expired. Where these facts cannot be read (other
//! systems, another machine sharing a PostgreSQL database, an owner id set by the caller),
//! nothing is concluded and only expiry counts.

use std::sync::OnceLock;

/// The boot id of this machine, read once.
fn boot_id() -> Option<&'static str> {
    static BOOT: OnceLock<Option<String>> = OnceLock::new();
    BOOT.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let id = text.trim();
        // The id goes into the owner string between separators it must not contain.
        (!id.is_empty() && !id.contains(['@', '.'])).then(|| id.to_owned())
    })
    .as_deref()
}

/// A process's state letter and start time (clock ticks since boot), from `/proc/<pid>/stat`.
fn process_stat(pid: &str) -> std::io::Result<Option<(char, u64)>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name (field 2) is in parentheses and may hold spaces or parentheses: the
    // fields after its last `)` are plain, starting with the state (field 3).
    let Some((_, rest)) = text.rsplit_once(')') else { return Ok(None) };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first().and_then(|s| s.chars().next());
    // Field 22 is the start time: the 20th after the command name.
    let start = fields.get(19).and_then(|s| s.parse::<u64>().ok());
    Ok(state.zip(start))
}

/// What this process appends to its owner id (empty where the facts cannot be read).
pub(crate) fn owner_suffix() -> String {
    let pid = std::process::id().to_string();
    match (boot_id(), process_stat(&pid)) {
        (Some(boot), Ok(Some((_, start)))) => format!("@{boot}.{start}"),
        _ => String::new(),
    }
}

/// True when `owner` names a process of this boot that no longer runs. False whenever that
/// cannot be known, and for this process itself (another store in it may hold the lease).
pub(crate) fn owner_is_dead(owner: &str) -> bool {
    let Some((head, tail)) = owner.rsplit_once('@') else { return false };
    let Some((boot, start)) = tail.rsplit_once('.') else { return false };
    let Some(pid) = head.strip_prefix("pid").and_then(|rest| rest.split('-').next()) else {
        return false;
    };
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) || pid == std::process::id().to_string() {
        return false;
    }
    let Ok(start) = start.parse::<u64>() else { return false };
    if boot_id() != Some(boot) {
        return false;
    }
    match process_stat(pid) {
        // No such process: it exited or was killed.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => true,
        // Killed but not yet reaped by its parent, or the pid now names another process.
        Ok(Some((state, started))) => matches!(state, 'Z' | 'X') || started != start,
        Err(_) | Ok(None) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_or_unreadable_owners_are_never_dead() {
        for owner in [
            "first",
            "pid1-abc",
            "pid-abc@boot.1",
            "pidx-abc@boot.1",
            "pid4000000-abc@another-boot.1",
            "pid4000000-abc@boot.notanumber",
        ] {
            assert!(!owner_is_dead(owner), "{owner}");
        }
        // This process is alive, whatever the suffix says.
        let me = format!("pid{}-abc{}", std::process::id(), owner_suffix());
        assert!(!owner_is_dead(&me));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_gone_or_reused_pid_of_this_boot_is_dead() {
        let suffix = owner_suffix();
        assert!(suffix.starts_with('@'), "Linux names the boot and start time: {suffix:?}");
        let Some((boot, start)) = suffix.trim_start_matches('@').rsplit_once('.') else { panic!("{suffix}") };
        // Above the largest pid Linux hands out (2^22).
        assert!(owner_is_dead(&format!("pid4194305-abc@{boot}.{start}")));
        // A child that ran and was reaped is gone.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(owner_is_dead(&format!("pid{pid}-abc@{boot}.{start}")));
        // A living process with another start time is not the owner.
        let mut sleeper = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let sleeper_pid = sleeper.id().to_string();
        let (_, started) = process_stat(&sleeper_pid).unwrap().unwrap();
        assert!(!owner_is_dead(&format!("pid{sleeper_pid}-abc@{boot}.{started}")));
        assert!(owner_is_dead(&format!("pid{sleeper_pid}-abc@{boot}.{}", started + 1)));
        sleeper.kill().unwrap();
        // Killed and not yet reaped: a zombie, dead all the same.
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(owner_is_dead(&format!("pid{sleeper_pid}-abc@{boot}.{started}")));
        sleeper.wait().unwrap();
    }
}

//! Rebuilds the crate when a migration is added or changed: `sqlx::migrate!` embeds the
//! migration folders, and stable Rust cannot tell Cargo that a macro read a folder.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}

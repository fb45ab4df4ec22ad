//! Opening a SQLite file: a fresh one is created and migrated, and one already migrated is
//! opened without a write (no migration bookkeeping, no journal-mode change, no recovery when
//! nothing expired), so that starting a process costs no disk writes or syncs.

use std::path::Path;

use super::support::{Kind, TestDb};

/// The bytes of a file, empty when it does not exist.
fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopening_a_migrated_sqlite_file_writes_nothing() {
    let db = TestDb::new(Kind::Sqlite, "reopen_writes_nothing").await;
    let store = db.open().await;
    store.close().await.unwrap();
    let file = db.sqlite_path();
    let wal = file.with_extension("db-wal");
    let (file_before, wal_before) = (bytes(&file), bytes(&wal));
    assert!(!file_before.is_empty(), "the first open created the file");
    // In WAL mode: the header's file format versions (bytes 18 and 19) are 2.
    assert_eq!(file_before.get(18..20), Some(&[2u8, 2][..]), "the new file is not in WAL mode");

    let store = db.open().await;
    // While it is open: a write of any kind would have put frames in the WAL.
    assert_eq!(bytes(&wal), wal_before, "opening wrote to the WAL");
    store.close().await.unwrap();
    assert!(bytes(&file) == file_before, "opening changed the database file");
    db.finish().await;
}

//! `verify` and `export` of a store copy without write permission: they succeed and leave the
//! copy exactly as it was.

use std::process::Output;

use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{Container, PartitionKey, Store};
use serde_json::json;
use tempfile::TempDir;

use testkit::binary;

use crate::verify::{embedded_store, stdout_lines};

fn pk(value: &str) -> PartitionKey {
    PartitionKey::single(value)
}

/// What a check must leave as it was: the database file's bytes and modification time, and the
/// names of the files in its folder that hold something, but SQLite's shared-memory index
/// (`-shm`): a reader may create it, and an empty `-wal`, where the folder lets it (as root,
/// always).
fn untouched_state(dir: &std::path::Path) -> (Vec<u8>, std::time::SystemTime, Vec<String>) {
    let file = dir.join("blog.sqlite3");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.metadata().unwrap().len() > 0)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with("-shm"))
        .collect();
    names.sort();
    let modified = std::fs::metadata(&file).unwrap().modified().unwrap();
    (std::fs::read(&file).unwrap(), modified, names)
}

/// `verify` of the store in `data` as an ordinary user: where the tests run as root, which
/// permissions do not stop, as `nobody` (through `runuser`), whom they do; `None` when no
/// such user can be taken on. `nobody` runs a copy of the binary in `reachable` (a folder
/// open to all): the checkout's own may sit in a folder only its owner enters, such as one
/// made by `mktemp -d`.
fn verify_as_an_ordinary_user(
    data: &std::path::Path,
    reachable: &std::path::Path,
) -> Option<Output> {
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").ok()?.uid() == 0;
    let mut command = if root {
        let runuser = std::path::Path::new("/usr/sbin/runuser");
        if !runuser.exists() {
            return None;
        }
        let binary = reachable.join("cosmos-blog");
        std::fs::copy(env!("CARGO_BIN_EXE_cosmos-blog"), &binary).expect("a copy of the binary");
        set_mode(&binary, 0o755);
        let mut command = std::process::Command::new(runuser);
        command.args(["-u", "nobody", "--"]).arg(binary);
        command
    } else {
        std::process::Command::new(env!("CARGO_BIN_EXE_cosmos-blog"))
    };
    command
        .arg("verify")
        .env("BLOG_DATA_DIR", data)
        .env("RUST_LOG", "warn");
    Some(command.output().expect("the binary runs"))
}

fn set_mode(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `verify` and `export` of a copy without write permission (folder and file) succeed and
/// write nothing to it; the store opened read-only refuses writes. As root, where permissions
/// stop nothing, the unchanged file (no schema, statistics or purge written) is what shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_copy_verifies_and_exports_without_a_write() {
    let dir = embedded_store(true).await;
    let copy = TempDir::new().unwrap();
    let read_only = copy.path().join("read-only");
    cosmos_blog::store::embedded::backup(
        &dir.path().join("blog.sqlite3"),
        &read_only.join("blog.sqlite3"),
    )
    .expect("a copy");
    set_mode(&read_only.join("blog.sqlite3"), 0o444);
    set_mode(&read_only, 0o555);
    set_mode(copy.path(), 0o755);
    let before = untouched_state(&read_only);

    // Where permissions hold, SQLite cannot create the -shm file: the file is read immutable.
    if let Some(ordinary) = verify_as_an_ordinary_user(&read_only, copy.path()) {
        assert_eq!(ordinary.status.code(), Some(0), "{ordinary:?}");
        assert!(stdout_lines(&ordinary)[0].starts_with("verify: OK"));
    }

    let verified = binary!().on_data(&read_only).subcommand("verify").output();
    assert_eq!(verified.status.code(), Some(0), "{verified:?}");
    assert!(stdout_lines(&verified)[0].starts_with("verify: OK"));
    let exported = binary!()
        .on_data(&read_only)
        .subcommand("export")
        .arg("--out")
        .arg(copy.path().join("export"))
        .output();
    assert!(exported.status.success(), "{exported:?}");

    let store = EmbeddedStore::open_read_only(&read_only.join("blog.sqlite3"), Default::default())
        .expect("opens read-only");
    let refused = store
        .upsert_item(
            Container::Users,
            &pk("eve"),
            json!({"id": "eve", "type": "user", "userId": "eve", "username": "Eve"}),
        )
        .await
        .expect_err("a read-only store refuses writes");
    assert!(refused.to_string().contains("read-only"), "{refused}");
    drop(store);

    let after = untouched_state(&read_only);
    assert!(
        after == before,
        "the copy was written to: bytes the same {}, modified {:?} then {:?}, files {:?} then {:?}",
        after.0 == before.0,
        before.1,
        after.1,
        before.2,
        after.2
    );
    set_mode(&read_only, 0o755);
}

//! Staging: the script root `stage` lays out, and its zip.

use super::*;

fn dummy_binary(dir: &Path) -> PathBuf {
    let path = dir.join("dummy-cosmos-blog");
    std::fs::write(&path, b"#!/bin/sh\necho not really the binary\n").expect("dummy");
    path
}

fn expected_layout(tenancy: Tenancy) -> Vec<PathBuf> {
    let mut expected: Vec<PathBuf> = metadata::function_names(tenancy)
        .iter()
        .map(|name| Path::new(name).join("function.json"))
        .chain([PathBuf::from("host.json"), PathBuf::from("cosmos-blog")])
        .collect();
    expected.sort();
    expected
}

/// Stages `binary` into `out` for `tenancy`, and checks that `out` then holds the script
/// root's files, as the metadata writes them, and nothing else.
fn assert_stages(out: &Path, binary: &Path, tenancy: Tenancy) {
    stage::stage(out, binary, tenancy).expect("stage");
    assert_eq!(
        stage::files_under(out).expect("list"),
        expected_layout(tenancy)
    );
    for file in metadata::script_root_files(tenancy) {
        assert_eq!(
            std::fs::read_to_string(out.join(&file.path)).expect("staged file"),
            file.content
        );
    }
}

#[test]
fn stage_lays_out_a_flat_script_root_and_nothing_else() {
    let work = tempfile::tempdir().expect("tempdir");
    let binary = dummy_binary(work.path());
    let out = work.path().join("staging/app");
    assert_stages(&out, &binary, Tenancy::Single);
    assert_eq!(
        std::fs::read(out.join("cosmos-blog")).expect("binary"),
        std::fs::read(&binary).expect("dummy")
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(out.join("cosmos-blog"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
    }
    // Staging again replaces the previous staging.
    std::fs::write(out.join("leftover.txt"), "old").expect("leftover");
    assert_stages(&out, &binary, Tenancy::Single);
}

#[test]
fn stage_multi_writes_the_tenant_routes_and_starts_the_binary_in_multi() {
    let work = tempfile::tempdir().expect("tempdir");
    let binary = dummy_binary(work.path());
    let out = work.path().join("app");
    assert_stages(&out, &binary, Tenancy::Multi);
    let read = |path: &str| -> Value {
        serde_json::from_slice(&std::fs::read(out.join(path)).expect("staged")).expect("json")
    };
    assert_eq!(
        read("GetUser/function.json")["bindings"][0]["route"],
        "api/tenants/{tenantId}/users/{userId}"
    );
    assert_eq!(
        read("ListUsers/function.json")["bindings"][0]["route"],
        "api/tenants/{tenantId}/users"
    );
    assert_eq!(
        handler_arguments(&read("host.json")),
        ["--tenancy", "multi"]
    );

    // Staged again as single: Q7's folder goes with the rest of the previous staging.
    assert_stages(&out, &binary, Tenancy::Single);
}

#[test]
fn stage_refuses_to_wipe_a_folder_that_is_not_a_staging() {
    let work = tempfile::tempdir().expect("tempdir");
    let binary = dummy_binary(work.path());
    let out = work.path().join("precious");
    std::fs::create_dir_all(&out).expect("dir");
    std::fs::write(out.join("notes.txt"), "keep me").expect("file");
    assert!(stage::stage(&out, &binary, Tenancy::Single).is_err());
    assert!(out.join("notes.txt").is_file());
    let missing = work.path().join("missing");
    assert!(stage::stage(&work.path().join("x"), &missing, Tenancy::Single).is_err());
}

/// Opens the staged zip of `tenancy` and checks what Azure Functions on Linux needs of it:
/// host.json at the root, every function folder flattened beside it, the binary as a regular
/// file whose Unix mode (recorded as made on Unix) has the owner's execute bit, and host.json
/// naming that entry as the handler to start.
fn check_the_zip_of(tenancy: Tenancy) {
    let work = tempfile::tempdir().expect("tempdir");
    let binary = dummy_binary(work.path());
    let out = work.path().join("app");
    stage::stage(&out, &binary, tenancy).expect("stage");
    // Whatever mode the build machine left on the file, the zip records its own.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            out.join("cosmos-blog"),
            std::fs::Permissions::from_mode(0o644),
        )
        .expect("chmod");
    }
    let archive_path = stage::zip_path(&out);
    stage::zip_script_root(&out, &archive_path).expect("zip");
    assert_eq!(archive_path, work.path().join("app.zip"));

    let file = std::fs::File::open(&archive_path).expect("open zip");
    let mut archive = zip::ZipArchive::new(file).expect("read zip");
    let mut names: Vec<String> = archive
        .file_names()
        .map(|name| name.expect("entry name").into_owned())
        .collect();
    names.sort();
    let expected: Vec<String> = expected_layout(tenancy)
        .iter()
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .collect();
    assert_eq!(
        names, expected,
        "host.json, <Function>/function.json, the binary"
    );

    let mut host = String::new();
    std::io::Read::read_to_string(&mut archive.by_name("host.json").expect("host"), &mut host)
        .expect("read host.json");
    assert_eq!(host, metadata::script_root_files(tenancy)[0].content);
    let host: Value = serde_json::from_str(&host).expect("host.json is JSON");
    let handler = host["customHandler"]["description"]["defaultExecutablePath"]
        .as_str()
        .expect("defaultExecutablePath");
    assert_eq!(handler, "cosmos-blog");

    let binary_entry = archive.by_name(handler).expect("the handler's entry");
    assert!(binary_entry.is_file());
    assert_eq!(binary_entry.system(), zip::System::Unix);
    let mode = binary_entry.unix_mode().expect("a Unix mode");
    assert_eq!(mode & 0o170000, 0o100000, "a regular file, mode {mode:o}");
    assert_eq!(
        mode & 0o100,
        0o100,
        "executable by its owner, mode {mode:o}"
    );
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(binary_entry.compression(), zip::CompressionMethod::Deflated);
    drop(binary_entry);
    for name in &names {
        let entry = archive.by_name(name).expect("entry");
        assert_eq!(entry.system(), zip::System::Unix, "{name}");
        if name.as_str() != handler {
            assert_eq!(entry.unix_mode().map(|m| m & 0o777), Some(0o644), "{name}");
        }
    }
}

#[test]
fn the_zip_holds_the_script_root_with_an_executable_binary() {
    check_the_zip_of(Tenancy::Single);
}

#[test]
fn the_multi_tenant_zip_holds_its_script_root_with_an_executable_binary() {
    check_the_zip_of(Tenancy::Multi);
}

//! The binary's operator-facing behaviour: settings that contradict each other, `stage`'s
//! refusal of binaries the Functions Linux host cannot start, and how fatal errors read.

use std::path::Path;
use std::process::Output;

use tempfile::TempDir;
use testkit::binary;

const CONNECTION: &str = "AccountEndpoint=https://localhost:8081/;AccountKey=a2V5;";
const ENDPOINT: &str = "https://blog.documents.azure.com:443/";

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Every command that opens a store refuses both Cosmos DB sign-ins at once, before it
/// touches anything, with the same message and status.
#[test]
fn every_command_refuses_a_connection_string_beside_an_account_endpoint() {
    let data = TempDir::new().expect("temp dir");
    let folder = data.path().join("export");
    let folder = folder.to_str().expect("UTF-8 path");
    let commands: [&[&str]; 6] = [
        &["serve"],
        &["verify"],
        &["rebuild"],
        &["export", "--out", folder],
        &["import", "--from", folder],
        &["backup", "--to", folder],
    ];
    for args in commands {
        let (subcommand, rest) = args.split_first().expect("a subcommand");
        let output = binary!()
            .on_data(data.path())
            .subcommand(subcommand)
            .args(rest.iter())
            .env("CosmosDBConnection", CONNECTION)
            .env("CosmosDBConnection__accountEndpoint", ENDPOINT)
            .output();
        let log = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {log}");
        assert!(
            log.contains("contradictory settings")
                && log.contains("CosmosDBConnection (--cosmos-connection)")
                && log.contains("CosmosDBConnection__accountEndpoint (--cosmos-endpoint)"),
            "{args:?}: {log}"
        );
        assert!(
            !data.path().join("blog.sqlite3").exists(),
            "{args:?} opened a store"
        );
    }
}

#[test]
fn the_server_refuses_jwt_settings_outside_jwt_mode() {
    let data = TempDir::new().expect("temp dir");
    let output = binary!()
        .on_data(data.path())
        .subcommand("serve")
        .env("BLOG_AUTH", "header")
        .env("BLOG_JWT_ISSUER", "https://issuer.example")
        .env("BLOG_JWT_AUDIENCE", "blog")
        .output();
    let log = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{log}");
    assert!(
        log.contains("BLOG_JWT_ISSUER, BLOG_JWT_AUDIENCE set, but BLOG_AUTH (--auth) is not `jwt`"),
        "{log}"
    );
}

/// A fatal error is one line on stderr, not a log line and then the same again.
#[test]
fn a_fatal_error_is_printed_once() {
    let data = TempDir::new().expect("temp dir");
    let output = binary!()
        .on_data(data.path())
        .subcommand("export")
        .args(["--out", "/proc/no-such-folder/export"])
        .output();
    let log = stderr(&output);
    assert!(!output.status.success(), "{log}");
    let first = log
        .lines()
        .find(|line| line.contains("error"))
        .expect("an error line");
    let reason = first.rsplit(": ").next().expect("a reason");
    assert_eq!(
        log.matches(reason).count(),
        1,
        "printed more than once:\n{log}"
    );
}

// ---- stage ------------------------------------------------------------------------------------

fn stage(binary: &Path, out: &Path) -> Output {
    binary!()
        .subcommand("stage")
        .arg("--binary")
        .arg(binary)
        .arg("--out")
        .arg(out)
        .output()
}

/// A 64-bit little-endian ELF header for `machine`, with no sections.
fn elf_header(machine: u16) -> Vec<u8> {
    let mut header = vec![0u8; 64];
    header[..4].copy_from_slice(b"\x7fELF");
    header[4] = 2; // 64-bit
    header[5] = 1; // little-endian
    header[6] = 1; // ELF version
    header[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
    header[18..20].copy_from_slice(&machine.to_le_bytes());
    header[20..24].copy_from_slice(&1u32.to_le_bytes());
    header[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
    header
}

#[test]
fn stage_says_there_is_no_binary_and_nothing_else() {
    let work = TempDir::new().expect("temp dir");
    let output = stage(&work.path().join("missing"), &work.path().join("app"));
    let log = stderr(&output);
    assert!(!output.status.success());
    assert!(log.contains("no binary at"), "{log}");
    assert!(!log.contains("not a Linux x86-64"), "{log}");
    assert!(!work.path().join("app").exists());
}

#[test]
fn stage_refuses_what_is_not_a_linux_x86_64_executable() {
    let work = TempDir::new().expect("temp dir");
    let script = work.path().join("script.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").expect("write");
    let arm = work.path().join("arm64");
    std::fs::write(&arm, elf_header(183)).expect("write"); // EM_AARCH64
    for binary in [script, arm] {
        let output = stage(&binary, &work.path().join("app"));
        let log = stderr(&output);
        assert!(!output.status.success(), "{binary:?} staged");
        assert!(log.contains("is not a Linux x86-64 executable"), "{log}");
        assert!(!work.path().join("app").exists(), "{binary:?} staged");
    }
}

/// The test binary itself needs whatever glibc this machine's toolchain links against; a
/// copy whose version requirement is rewritten to GLIBC_9.99 stands in for a binary built on
/// a system newer than the Functions image.
#[test]
fn stage_refuses_a_binary_that_needs_a_newer_glibc() {
    let work = TempDir::new().expect("temp dir");
    let mut bytes = std::fs::read(env!("CARGO_BIN_EXE_cosmos-blog")).expect("read the binary");
    let Some(at) = bytes
        .windows(b"GLIBC_2.3".len())
        .position(|window| window == b"GLIBC_2.3")
    else {
        panic!("the binary names no GLIBC_2.3x version to rewrite");
    };
    bytes[at..at + 9].copy_from_slice(b"GLIBC_9.9");
    let newer = work.path().join("cosmos-blog");
    std::fs::write(&newer, bytes).expect("write");
    let output = stage(&newer, &work.path().join("app"));
    let log = stderr(&output);
    assert!(!output.status.success(), "staged: {log}");
    assert!(
        log.contains("needs glibc 9.9")
            && log.contains("Azure Functions Linux image has glibc 2.36"),
        "{log}"
    );
    assert!(!work.path().join("app").exists());
}

#[test]
fn stage_takes_the_binary_it_was_built_as() {
    let work = TempDir::new().expect("temp dir");
    let output = stage(
        Path::new(env!("CARGO_BIN_EXE_cosmos-blog")),
        &work.path().join("app"),
    );
    assert!(output.status.success(), "{}", stderr(&output));
}

// ---- the command line -------------------------------------------------------------------------

/// Settings go before or after the command, and the command's help lists them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_go_before_or_after_any_command() {
    for args in [["serve", "--port", "0"], ["--port", "0", "serve"]] {
        let mut server = binary!().on_fresh_data().args(args).serve().ready().await;
        let health = reqwest::get(server.url("/api/health"))
            .await
            .expect("the server answers");
        assert_eq!(health.status(), reqwest::StatusCode::OK, "{args:?}");
        assert!(server.terminate().await.success(), "{args:?}");
    }
    let multi = cosmos_blog::api::openapi::json_for(cosmos_blog::store::Tenancy::Multi);
    for args in [
        ["openapi", "--tenancy", "multi", "--out", "-"],
        ["--tenancy", "multi", "openapi", "--out", "-"],
    ] {
        let output = binary!().args(args).output();
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        assert!(output.stdout == multi.as_bytes(), "{args:?}");
    }
    let help = binary!().args(["serve", "--help"]).output();
    let help = String::from_utf8_lossy(&help.stdout);
    for setting in [
        "--port",
        "--data-dir",
        "--auth",
        "--tenancy",
        "BLOG_DATA_DIR",
    ] {
        assert!(help.contains(setting), "{setting} in:\n{help}");
    }
}

/// A reader that goes away (`cosmos-blog openapi --out - | head -c 200`) ends the command
/// quietly: no panic, no backtrace, success.
#[test]
fn a_command_whose_reader_goes_away_ends_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    let document = cosmos_blog::api::openapi::json();
    assert!(
        document.len() > 64 * 1024,
        "more than a pipe holds, so that the writer meets the closed pipe"
    );
    let mut command = binary!().args(["openapi", "--out", "-"]).into_command();
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut head = [0u8; 200];
    child
        .stdout
        .take()
        .expect("its stdout")
        .read_exact(&mut head)
        .expect("200 bytes");
    let output = child.wait_with_output().expect("it ends");
    let log = stderr(&output);
    assert!(output.status.success(), "{:?}: {log}", output.status);
    assert!(!log.contains("panicked") && log.trim().is_empty(), "{log}");
    assert_eq!(&head[..], &document.as_bytes()[..200]);
}

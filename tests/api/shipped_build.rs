//! What `cargo build --release` at the root (the deployment's build, and `cargo run`) compiles
//! the binary with: none of the SDK's test-only features. The in-memory emulator and the fault
//! injection are dependencies of the test support alone; Cargo unifies a dependency's features
//! over every package a build selects, so a test crate among the workspace's default members
//! would switch them on in the shipped binary too.

use std::process::Command;

/// Features of the Cosmos DB SDK that only the tests and the harness may turn on.
const TEST_ONLY_FEATURES: [&str; 2] = ["__internal_in_memory_emulator", "fault_injection"];

#[test]
fn the_release_build_turns_on_no_test_only_feature_of_the_sdk() {
    // `cargo tree` resolves features as `cargo build` would for the same selection: here the
    // default members, without dev-dependencies.
    let output = Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tree", "--edges", "normal,build", "--prefix", "none"])
        .args(["--format", "{p} {f}"])
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tree = String::from_utf8_lossy(&output.stdout);
    let sdk: Vec<&str> = tree
        .lines()
        .filter(|line| line.starts_with("azure_data_cosmos"))
        .collect();
    assert!(!sdk.is_empty(), "the SDK is not in the tree:\n{tree}");
    let leaks: Vec<&&str> = sdk
        .iter()
        .filter(|line| {
            TEST_ONLY_FEATURES
                .iter()
                .any(|feature| line.split([' ', ',']).any(|word| word == *feature))
        })
        .collect();
    assert!(
        leaks.is_empty(),
        "the release build turns on test-only features: {leaks:?}"
    );
}

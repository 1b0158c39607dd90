//! The committed documents are the generated ones, and the `openapi` command writes them.

use super::*;

#[test]
fn the_committed_documents_are_the_generated_ones() {
    for tenancy in LAYOUTS {
        let file = openapi::committed_file(tenancy);
        let committed = std::fs::read_to_string(repository().join(file)).unwrap_or_default();
        assert!(
            committed == openapi::json_for(tenancy),
            "{file} is stale: run `cargo run -- openapi --tenancy {tenancy}`"
        );
    }
    assert_eq!(openapi::json(), openapi::json_for(Tenancy::Single));
}

#[test]
fn the_openapi_command_writes_each_layouts_document() {
    for tenancy in LAYOUTS {
        let output = binary!()
            .args(["openapi", "--tenancy", tenancy.name(), "--out", "-"])
            .output();
        assert!(output.status.success());
        assert!(
            output.stdout == openapi::json_for(tenancy).into_bytes(),
            "{tenancy}"
        );
    }
}

//! The upload's body as the documents describe it: the image's raw bytes, one media type per
//! accepted format, in OpenAPI 3.1's way of saying so (`contentMediaType`, no `type`: the
//! body is not a JSON string, and `format: binary` means nothing in 3.1).

use super::*;

#[test]
fn the_upload_body_is_the_raw_bytes_of_the_four_image_types() {
    for tenancy in LAYOUTS {
        let doc = document(tenancy);
        let path = match tenancy {
            Tenancy::Single => "/api/images",
            Tenancy::Multi => "/api/tenants/{tenantId}/images",
        };
        let body = &doc["paths"][path]["post"]["requestBody"];
        assert_eq!(body["required"], json!(true), "{tenancy}");
        let content = body["content"].as_object().expect("content by media type");
        let types: Vec<&str> = content.keys().map(String::as_str).collect();
        assert_eq!(
            types,
            ["image/gif", "image/jpeg", "image/png", "image/webp"],
            "{tenancy}"
        );
        for (media_type, described) in content {
            let schema = &described["schema"];
            assert_eq!(schema["contentMediaType"], json!(media_type), "{tenancy}");
            assert!(schema.get("type").is_none(), "{tenancy}: {schema}");
            assert!(schema.get("format").is_none(), "{tenancy}: {schema}");
            assert!(
                schema.get("contentEncoding").is_none(),
                "{tenancy}: {schema}"
            );
        }
    }
}

//! An item or a page of a list, as the API answers it (already serialised) and as its
//! description names it.

use std::borrow::Cow;

use axum::Json;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use crate::blog::{CreateOutcome, Listing, WireJson, page_json};
use crate::domain::{Comment, Like, Post, User};

/// The answer to a command that creates its item or finds it there: 201 with a new item, 200
/// with the one that existed.
pub(super) fn created_or_existing<T>(outcome: CreateOutcome, item: T) -> (StatusCode, Json<T>) {
    let status = match outcome {
        CreateOutcome::Created => StatusCode::CREATED,
        CreateOutcome::Existing => StatusCode::OK,
    };
    (status, Json(item))
}

/// A page of a list, `{"items": [...], "continuation": "<token>" | null}`, whose items are
/// already the JSON the API sends for them: written around them, not parsed again.
pub struct WirePage<T>(pub Listing<WireJson<T>>);

impl<T> IntoResponse for WirePage<T> {
    fn into_response(self) -> Response {
        // A page is written once (as it is read, for the pages a read keeps) and its body
        // shared by every answer that sends it.
        let body = self.0.body(|page| {
            let items = page.items.iter().map(WireJson::as_bytes);
            Bytes::from(page_json(items, page.continuation.as_deref()))
        });
        ([(CONTENT_TYPE, "application/json")], body).into_response()
    }
}

/// One item, already the JSON the API sends for it.
pub struct WireItem<T>(pub WireJson<T>);

impl<T> IntoResponse for WireItem<T> {
    fn into_response(self) -> Response {
        ([(CONTENT_TYPE, "application/json")], self.0.into_bytes()).into_response()
    }
}

/// The schema of a page of `item`s, with `items` referring to the item's schema.
fn page_schema(item: Cow<'static, str>) -> RefOr<Schema> {
    let continuation = ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .description(Some(
            "An opaque token: pass it back unchanged as `?continuation=` for the next page of \
             the same list; `null` on the last page.",
        ));
    ObjectBuilder::new()
        .description(Some(format!("A page of `{item}` items.")))
        .property(
            "items",
            ArrayBuilder::new().items(Ref::from_schema_name(item)),
        )
        .required("items")
        .property("continuation", continuation)
        .required("continuation")
        .into()
}

/// Names a page of one kind of item for the API description (`body = PostPage`): utoipa's
/// derive would inline the item's schema into a generic page type instead of referring
/// to it, which gives generated clients a second, anonymous item type.
macro_rules! page_schemas {
    ($($page:ident => $item:ty),* $(,)?) => {$(
        #[doc = concat!("The schema of a page of `", stringify!($item), "` items.")]
        pub struct $page;

        impl PartialSchema for $page {
            fn schema() -> RefOr<Schema> {
                page_schema(<$item as ToSchema>::name())
            }
        }

        impl ToSchema for $page {
            fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                schemas.push((<$item>::name().into_owned(), <$item>::schema()));
                <$item>::schemas(schemas);
            }
        }
    )*};
}

page_schemas!(PostPage => Post, CommentPage => Comment, LikePage => Like, UserPage => User);

//! A page of a list, as the API answers it and as its description names it.

use std::borrow::Cow;

use serde::Serialize;
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, SchemaType, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use crate::domain::{Comment, Like, Post, User};
use crate::store::Page;

/// A page of a list: `{"items": [...], "continuation": "<token>" | null}`.
#[derive(Debug, Serialize)]
pub struct PageBody<T> {
    pub items: Vec<T>,
    pub continuation: Option<String>,
}

/// The schema of a [`PageBody`] of `item`s, with `items` referring to the item's schema.
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
/// derive would inline the item's schema into a generic `PageBody<T>` instead of referring
/// to it, which gives generated clients a second, anonymous item type.
macro_rules! page_schemas {
    ($($page:ident => $item:ty),* $(,)?) => {$(
        #[doc = concat!("The schema of `PageBody<", stringify!($item), ">`.")]
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

impl<T> From<Page<T>> for PageBody<T> {
    fn from(page: Page<T>) -> Self {
        PageBody {
            items: page.items,
            continuation: page.continuation,
        }
    }
}

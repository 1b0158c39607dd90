//! The write and edit pages' image upload, without JavaScript: the page's own form, sent as
//! `multipart/form-data` by its "Upload and insert" button, carries the title and content
//! typed so far with the image. The image is stored as `POST /api/images` stores it, and the
//! page comes back with the same text and the image's Markdown added at its end.

use axum::extract::Multipart;
use axum::extract::multipart::Field;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use bytes::{Bytes, BytesMut};

use super::context::{BlogPage, PageContext};
use super::forms::{FormResult, PostForm, Unsent, post_form_again, write_page};
use crate::domain::PostId;
use crate::error::Error;
use crate::http::images::{BlogImages, image_path};
use crate::http::paths::PostPath;
use crate::images::ImageRefusal;
use crate::problem::Problem;

/// The text fields of the form, together, at most: as much as the write and edit forms take
/// ([`super::forms::MAX_PAGE_FORM_BYTES`]), so that a text too long comes back with its
/// reason rather than lost.
const MAX_TEXT_BYTES: usize = super::forms::MAX_PAGE_FORM_BYTES;

/// The most bytes of a form read so that its text comes back when its image is over the
/// limit: the image's bytes past the limit are counted, never kept (and read, so that a
/// browser that is still sending sees the answer). The Functions host refuses larger bodies
/// itself (100 MB by default).
const MAX_FORM_BYTES: u64 = 100 * 1024 * 1024;

/// What the form sent.
#[derive(Default)]
struct Sent {
    form: PostForm,
    image: Option<SentImage>,
}

/// The file the form sent: its declared type and its bytes, or only its size when it is over
/// the limit.
enum SentImage {
    Within(Option<String>, Bytes),
    Over { bytes: u64 },
}

/// `POST /write/image`.
pub async fn upload_on_write(
    BlogPage(context, blog): BlogPage,
    images: BlogImages,
    multipart: Multipart,
) -> FormResult {
    upload(context, blog, images, None, multipart).await
}

/// `POST /posts/{postId}/edit/image`.
pub async fn upload_on_edit(
    BlogPage(context, blog): BlogPage,
    images: BlogImages,
    PostPath(post_id): PostPath,
    multipart: Multipart,
) -> FormResult {
    upload(context, blog, images, Some(post_id), multipart).await
}

async fn upload(
    context: PageContext,
    blog: crate::blog::Blog,
    images: BlogImages,
    editing: Option<PostId>,
    multipart: Multipart,
) -> FormResult {
    let limit = images.store.limits().max_bytes;
    let sent = read_form(multipart, limit).await?;
    // The page's script (paste or drop) asks for JSON: the image's Markdown, or a problem.
    // A form comes back with what was typed in it, whatever refused it.
    let wants_json = context.asks_for_json();
    let refused = |problem: Problem| -> FormResult {
        if wants_json {
            return Err(problem.into());
        }
        Ok(post_form_again(
            &context,
            editing.as_ref(),
            &sent.form,
            &problem,
        ))
    };
    // What the page says of a refused image; the script says it in its own words.
    let not_added = |error: Error| -> FormResult {
        let problem = Problem::logged(&error);
        if wants_json {
            return Err(problem.into());
        }
        refused(Problem {
            detail: format!("The image was not added: {}.", problem.detail),
            ..problem
        })
    };
    let caller = match Unsent::check(&context, &sent.form.csrf) {
        Ok(caller) => caller,
        Err(unsent) => {
            let problem = Problem::new(unsent.status(), "form-not-taken", unsent.message());
            return refused(problem);
        }
    };
    let (declared, bytes) = match &sent.image {
        None => {
            let problem = "Choose an image to upload first.";
            return refused(Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "no-image",
                problem,
            ));
        }
        Some(SentImage::Over { bytes }) => {
            let too_large = ImageRefusal::TooLarge {
                bytes: Some(*bytes),
                limit,
            };
            return not_added(too_large.into());
        }
        Some(SentImage::Within(declared, bytes)) => (declared.clone(), bytes.clone()),
    };
    let tenant = images.tenant.as_ref();
    let item = match blog
        .upload_image(&images.store, &images.scope, &caller, declared, bytes)
        .await
    {
        Ok(item) => item,
        Err(error) => return not_added(error),
    };
    let url = image_path(tenant, &item.id, None);
    if wants_json {
        let answer = serde_json::json!({
            "id": item.id,
            "markdown": image_markdown(&sent.form.alt, &url),
            "url": url,
        });
        return Ok((StatusCode::CREATED, axum::Json(answer)).into_response());
    }
    let mut form = sent.form;
    form.content = with_image(&form.content, &form.alt, &url);
    // The alt text was the image's: the next image gets its own.
    form.alt.clear();
    let page = write_page(&context, editing.as_ref(), &form, None);
    Ok(context.respond(StatusCode::OK, &page))
}

/// `content` with the Markdown of the image at `url` added on a line of its own.
fn with_image(content: &str, alt: &str, url: &str) -> String {
    let separator = match content.trim_end() {
        "" => "",
        _ => "\n\n",
    };
    format!(
        "{}{separator}{}\n",
        content.trim_end(),
        image_markdown(alt, url)
    )
}

/// The Markdown that shows the image at `url` with `alt` as its text.
fn image_markdown(alt: &str, url: &str) -> String {
    // Brackets would end the Markdown's alt text early.
    let alt: String = alt
        .chars()
        .map(|c| if matches!(c, '[' | ']') { ' ' } else { c })
        .collect();
    format!("![{}]({url})", alt.trim())
}

/// The form's fields: its text, and its image up to `max_image_bytes` (past it, only the
/// image's size is kept, and the fields after it are read all the same).
async fn read_form(mut multipart: Multipart, max_image_bytes: usize) -> Result<Sent, Problem> {
    let mut sent = Sent::default();
    let mut text_bytes = 0;
    let mut form_bytes = 0;
    while let Some(mut field) = multipart.next_field().await.map_err(unreadable)? {
        let name = field.name().unwrap_or_default().to_owned();
        if name == "image" {
            let declared = field.content_type().map(str::to_owned);
            let mut kept = Some(BytesMut::new());
            let mut size = 0u64;
            while let Some(chunk) = field.chunk().await.map_err(unreadable)? {
                size += chunk.len() as u64;
                form_bytes += chunk.len() as u64;
                if form_bytes > MAX_FORM_BYTES {
                    return Err(form_too_large());
                }
                kept = kept
                    .filter(|_| size <= max_image_bytes as u64)
                    .map(|mut bytes| {
                        bytes.extend_from_slice(&chunk);
                        bytes
                    });
            }
            sent.image = match kept {
                // A file input left empty still sends its (empty) part.
                Some(bytes) if bytes.is_empty() => None,
                Some(bytes) => Some(SentImage::Within(declared, bytes.freeze())),
                None => Some(SentImage::Over { bytes: size }),
            };
            continue;
        }
        let bytes = read_field(field, MAX_TEXT_BYTES - text_bytes).await?;
        text_bytes += bytes.len();
        form_bytes += bytes.len() as u64;
        let text = String::from_utf8(bytes.to_vec()).map_err(|_| {
            Problem::new(
                StatusCode::BAD_REQUEST,
                "invalid-form",
                "a field is not UTF-8",
            )
        })?;
        match name.as_str() {
            "csrf" => sent.form.csrf = text,
            "title" => sent.form.title = text,
            "content" => sent.form.content = text,
            "tags" => sent.form.tags = text,
            "publishAt" => sent.form.publish_at = text,
            "alt" => sent.form.alt = text,
            _ => {}
        }
    }
    Ok(sent)
}

/// A text field's bytes, refused past `limit`.
async fn read_field(mut field: Field<'_>, limit: usize) -> Result<Bytes, Problem> {
    let mut bytes = BytesMut::new();
    while let Some(chunk) = field.chunk().await.map_err(unreadable)? {
        if bytes.len() + chunk.len() > limit {
            return Err(form_too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes.freeze())
}

fn form_too_large() -> Problem {
    Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body-too-large",
        format!(
            "the form is larger than can be read: its text may take {} KiB, its image {} MiB",
            MAX_TEXT_BYTES / 1024,
            MAX_FORM_BYTES / (1024 * 1024)
        ),
    )
}

fn unreadable(error: axum::extract::multipart::MultipartError) -> Problem {
    Problem::new(StatusCode::BAD_REQUEST, "invalid-form", error.body_text())
}

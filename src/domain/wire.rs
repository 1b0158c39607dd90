//! An item's wire form (the JSON that serialising it writes, which the API sends), copied
//! straight from the text the store holds when that text is already in that form field by
//! field. The lists (a user's posts, a post's comments and likes) send up to a hundred items
//! per request; parsing each into its type (a `String` per field) and writing it out again
//! was most of their cost beyond the store's read. The copy checks each field as parsing
//! would and hands back `false` at the first doubt (an escape serde_json would not write, a
//! date in another form, a missing or repeated field), so that the caller parses that item
//! as before: the bytes sent never differ from the parsed item's.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::dates::Timestamp;
use super::ids::is_stored_id;
use super::items::{Comment, Like, Post, Typed, User};
use super::publication::PostStatus;

/// A kind of item whose wire form can be copied from its stored text.
pub trait WireForm: Typed {
    /// Appends to `out` the wire form of the item stored as `stored` and answers `true`, when
    /// every field of `stored` is in the form serialising the parsed item writes; answers
    /// `false` with `out` as it was otherwise.
    fn copy_wire_form(stored: &str, out: &mut String) -> bool;
}

/// How each field is checked: as deserialising the item checks it, and in the form that
/// serialising it writes.
#[derive(Clone, Copy)]
enum Field {
    /// An id: a string without escapes that the store can hold.
    Id,
    /// The `type` tag: the kind's own.
    Tag,
    /// Any string, escaped as serde_json escapes.
    Text,
    /// A count: an unsigned integer, without sign, exponent or leading zero.
    Count,
    /// A date in the canonical form.
    Date,
    /// A post's status: one of its names.
    Status,
    /// A non-empty array of strings without escapes, written without spaces (an empty one
    /// is left out by serialising, so its copy is refused).
    Strings,
}

impl Field {
    fn holds(self, raw: &RawValue, tag: &str) -> bool {
        let raw = raw.get();
        match self {
            Field::Id => plain_string(raw).is_some_and(is_stored_id),
            Field::Tag => plain_string(raw) == Some(tag),
            Field::Text => is_canonical_string(raw),
            Field::Count => is_canonical_count(raw),
            Field::Date => plain_string(raw).is_some_and(Timestamp::is_canonical),
            Field::Status => plain_string(raw)
                .is_some_and(|name| PostStatus::ALL.iter().any(|s| s.as_str() == name)),
            Field::Strings => is_compact_list_of_plain_strings(raw),
        }
    }
}

/// The characters of a JSON string that holds no escape, or `None`.
fn plain_string(raw: &str) -> Option<&str> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then_some(inner)
}

/// Whether `raw` is `["a","b"]`: at least one string, none with an escape, no white space.
fn is_compact_list_of_plain_strings(raw: &str) -> bool {
    let Some(inner) = raw.strip_prefix("[\"").and_then(|r| r.strip_suffix("\"]")) else {
        return false;
    };
    inner
        .split("\",\"")
        .all(|one| !one.contains(['"', '\\']) && !one.chars().any(char::is_control))
}

/// Whether a JSON string is escaped as serde_json escapes: only `"`, `\` and the control
/// characters, those with a short form by it (`\n`), the others as `\u00xx` in lowercase.
/// (A parsed string holds no unescaped control character: JSON forbids them.)
fn is_canonical_string(raw: &str) -> bool {
    let Some(inner) = raw
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
    else {
        return false;
    };
    let mut bytes = inner.bytes();
    while let Some(byte) = bytes.next() {
        if byte != b'\\' {
            continue;
        }
        match bytes.next() {
            Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => {}
            Some(b'u') => {
                let mut code = 0u32;
                for _ in 0..4 {
                    let digit = match bytes.next() {
                        Some(digit @ b'0'..=b'9') => digit - b'0',
                        Some(digit @ b'a'..=b'f') => digit - b'a' + 10,
                        _ => return false,
                    };
                    code = code * 16 + u32::from(digit);
                }
                let has_short_form = matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d);
                if code >= 0x20 || has_short_form {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

/// Whether a JSON number is an unsigned 64-bit integer written as serialising one writes it.
fn is_canonical_count(raw: &str) -> bool {
    let digits_only = !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit());
    let no_leading_zero = raw == "0" || !raw.starts_with('0');
    digits_only && no_leading_zero && raw.parse::<u64>().is_ok()
}

/// Writes the wire form of `fields` (name, kind, raw value, in the type's field order); an
/// optional field that is absent (`None`) is left out, as serialising leaves it out.
fn copy_fields(fields: &[(&str, Field, Option<&RawValue>)], tag: &str, out: &mut String) -> bool {
    let present = || {
        fields
            .iter()
            .filter_map(|(name, field, raw)| raw.map(|raw| (name, field, raw)))
    };
    if !present().all(|(_, field, raw)| field.holds(raw, tag)) {
        return false;
    }
    out.reserve(
        present()
            .map(|(name, _, raw)| name.len() + raw.get().len() + 4)
            .sum(),
    );
    out.push('{');
    for (position, (name, _, raw)) in present().enumerate() {
        if position > 0 {
            out.push(',');
        }
        out.push('"');
        out.push_str(name);
        out.push_str("\":");
        out.push_str(raw.get());
    }
    out.push('}');
    true
}

/// Implements [`WireForm`] for a type from its fields in declaration order, each with its
/// JSON name and [`Field`] kind: a struct that borrows every field's raw text (deserialising
/// it refuses a missing or repeated field and skips unknown ones, as the type's own does).
/// The tests compare the copy with the type's serialisation, so a field added to the type
/// and not here fails them. Fields after `optional` are those the type leaves out when they
/// have no value (`skip_serializing_if = "Option::is_none"`), last in the type.
macro_rules! wire_form {
    ($type:ty, $stored:ident { $($field:ident: $name:literal => $kind:ident),+ $(,)? }
     $(optional { $($opt:ident: $opt_name:literal => $opt_kind:ident),+ $(,)? })?) => {
        #[derive(Deserialize)]
        struct $stored<'a> {
            $(
                #[serde(rename = $name, borrow)]
                $field: &'a RawValue,
            )+
            $($(
                #[serde(rename = $opt_name, borrow, default)]
                $opt: Option<&'a RawValue>,
            )+)?
        }

        impl WireForm for $type {
            fn copy_wire_form(stored: &str, out: &mut String) -> bool {
                let Ok(item) = serde_json::from_str::<$stored<'_>>(stored) else {
                    return false;
                };
                copy_fields(
                    &[
                        $(($name, Field::$kind, Some(item.$field)),)+
                        $($(($opt_name, Field::$opt_kind, item.$opt),)+)?
                    ],
                    <$type as Typed>::TYPE,
                    out,
                )
            }
        }
    };
}

wire_form!(User, StoredUser {
    id: "id" => Id,
    kind: "type" => Tag,
    user_id: "userId" => Id,
    username: "username" => Text,
});

wire_form!(Post, StoredPost {
    id: "id" => Id,
    kind: "type" => Tag,
    post_id: "postId" => Id,
    user_id: "userId" => Id,
    user_username: "userUsername" => Text,
    title: "title" => Text,
    content: "content" => Text,
    comment_count: "commentCount" => Count,
    like_count: "likeCount" => Count,
    creation_date: "creationDate" => Date,
    status: "status" => Status,
} optional {
    modified_date: "modifiedDate" => Date,
    publish_at: "publishAt" => Date,
    published_date: "publishedDate" => Date,
    tags: "tags" => Strings,
});

wire_form!(Comment, StoredComment {
    id: "id" => Id,
    kind: "type" => Tag,
    post_id: "postId" => Id,
    user_id: "userId" => Id,
    user_username: "userUsername" => Text,
    content: "content" => Text,
    creation_date: "creationDate" => Date,
});

wire_form!(Like, StoredLike {
    id: "id" => Id,
    kind: "type" => Tag,
    post_id: "postId" => Id,
    user_id: "userId" => Id,
    user_username: "userUsername" => Text,
    creation_date: "creationDate" => Date,
});

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use serde::de::DeserializeOwned;
    use serde_json::{Value, json};

    use super::*;

    /// The copy of `stored` if it is taken; either way, what parsing and serialising gives,
    /// which the copy must equal.
    fn both<T: WireForm + DeserializeOwned + Serialize>(
        stored: &str,
    ) -> (Option<String>, Option<String>) {
        let mut copied = String::new();
        let taken = T::copy_wire_form(stored, &mut copied);
        assert!(taken || copied.is_empty(), "a refused copy left {copied:?}");
        let parsed = serde_json::from_str::<T>(stored)
            .ok()
            .map(|item| serde_json::to_string(&item).unwrap());
        (taken.then_some(copied), parsed)
    }

    /// The copy, whenever it is taken, equals the parsed item serialised, and it is taken
    /// for the stored form of every item the platform writes.
    fn assert_copies<T: WireForm + DeserializeOwned + Serialize>(stored: &str, taken: bool) {
        let (copied, parsed) = both::<T>(stored);
        if let Some(copied) = &copied {
            assert_eq!(Some(copied), parsed.as_ref(), "stored: {stored}");
        }
        assert_eq!(copied.is_some(), taken, "stored: {stored}");
    }

    /// The stored text of `value`: the store writes a `Value` (keys in alphabetical order).
    fn stored(value: &Value) -> String {
        value.to_string()
    }

    fn post() -> Value {
        json!({
            "id": "3f2b8c1e-7d4a-4e9b-9c21-5a6f0e8d4b17", "type": "post",
            "postId": "3f2b8c1e-7d4a-4e9b-9c21-5a6f0e8d4b17", "userId": "ada",
            "userUsername": "Ada", "title": "Hello", "content": "# Hi\n\n*world* \"quoted\"",
            "commentCount": 3, "likeCount": 0, "creationDate": "2026-11-22T09:15:02.1234567Z",
            "status": "published", "publishedDate": "2026-11-22T09:15:02.1234567Z"
        })
    }

    fn with(mut item: Value, field: &str, value: Value) -> Value {
        item[field] = value;
        item
    }

    #[test]
    fn every_kind_is_copied_as_serialising_it_writes() {
        assert_copies::<Post>(&stored(&post()), true);
        let edited = with(
            post(),
            "modifiedDate",
            json!("2026-11-23T10:00:00.0000000Z"),
        );
        assert_copies::<Post>(&stored(&edited), true);
        assert_copies::<Post>(&stored(&with(post(), "modifiedDate", Value::Null)), true);
        let tagged = with(post(), "tags", json!(["rust", "cosmos-db", "日本語"]));
        assert_copies::<Post>(&stored(&tagged), true);
        assert_copies::<Post>(&stored(&with(post(), "tags", json!([]))), false);
        assert_copies::<Post>(&stored(&with(post(), "tags", json!(["a\"b"]))), false);
        assert_copies::<Post>(&stored(&with(post(), "tags", json!("rust"))), false);
        let mut scheduled = with(post(), "status", json!("scheduled"));
        scheduled["publishAt"] = json!("2030-01-01T00:00:00.0000000Z");
        scheduled.as_object_mut().unwrap().remove("publishedDate");
        assert_copies::<Post>(&stored(&scheduled), true);
        assert_copies::<Post>(&stored(&with(post(), "status", json!("draft"))), true);
        // Stored before posts had a status: parsing adds it, so the copy is not taken.
        let mut old = post();
        old.as_object_mut().unwrap().remove("status");
        assert_copies::<Post>(&stored(&old), false);
        let user = json!({"id": "ada", "type": "user", "userId": "ada", "username": "Ada L."});
        assert_copies::<User>(&stored(&user), true);
        let comment = json!({
            "id": "9a41d2c7", "type": "comment", "postId": "p1", "userId": "bob",
            "userUsername": "Bob", "content": "tab\there, bell\u{7}, \\ and é",
            "creationDate": "2026-11-22T09:15:02.0000000Z"
        });
        assert_copies::<Comment>(&stored(&comment), true);
        let like = json!({
            "id": "7527d80e", "type": "like", "postId": "p1", "userId": "bob",
            "userUsername": "Bob", "creationDate": "0001-01-01T00:00:00.0000000Z"
        });
        assert_copies::<Like>(&stored(&like), true);
    }

    #[test]
    fn fields_of_the_items_every_writer_of_the_platform_makes_are_copied() {
        let written =
            serde_json::to_string(&serde_json::from_value::<Post>(post()).unwrap()).unwrap();
        assert_copies::<Post>(&written, true);
        // Cosmos DB adds its system properties, and a multi-tenant store the tenant's id.
        let mut from_cosmos = post();
        for (key, value) in [
            ("_rid", json!("AAAA")),
            ("_etag", json!("\"0000\"")),
            ("_ts", json!(1_764_000_000)),
            ("tenantId", json!("contoso")),
        ] {
            from_cosmos[key] = value;
        }
        assert_copies::<Post>(&stored(&from_cosmos), true);
        // Pretty-printed text copies its values, not its white space.
        assert_copies::<Post>(&serde_json::to_string_pretty(&post()).unwrap(), true);
    }

    #[test]
    fn forms_serialising_would_change_are_left_to_parsing() {
        let doubtful = [
            ("creationDate", json!("2026-11-22T09:15:02.12Z")),
            ("creationDate", json!("2026-11-22T10:15:02.1234567+01:00")),
            ("creationDate", json!("2026-02-30T09:15:02.1234567Z")),
            ("commentCount", json!(3.0)),
            ("commentCount", json!(-1)),
            ("title", json!(7)),
            ("userId", json!("a/b")),
            ("userId", json!("")),
            ("type", json!("comment")),
            ("status", json!("Published")),
            ("status", json!(null)),
            ("publishAt", json!("2030-01-01T00:00:00Z")),
        ];
        for (field, value) in doubtful {
            assert_copies::<Post>(&stored(&with(post(), field, value)), false);
        }
        let text = stored(&post());
        let escaped = [
            text.replace("Hello", "H\\u0065llo"),
            text.replace("Hello", "Hel\\/lo"),
            text.replace("Hello", "Hel\\u001Flo"),
            text.replace("Hello", "Hel\\u000alo"),
            text.replace("\"ada\"", "\"\\u0061da\""),
            text.replace("\"post\"", "\"p\\u006fst\""),
            text.replace("\"commentCount\":3", "\"commentCount\":03"),
            text.replace("\"commentCount\":3", "\"commentCount\":3e0"),
            text.replace("\"likeCount\":0", "\"likeCount\":-0"),
            text.replace("\"likeCount\":0,", ""),
            text.replace("\"likeCount\":0", "\"likeCount\":0,\"likeCount\":1"),
            "[]".to_owned(),
            "not json".to_owned(),
        ];
        for stored in &escaped {
            assert_copies::<Post>(stored, false);
        }
        // Escapes serde_json writes itself are copied.
        assert_copies::<Post>(&text.replace("Hello", "Hel\\u001flo"), true);
    }

    /// Many strings of awkward characters: every one that is copied equals the parsed item
    /// serialised, and all of those written by serde_json are copied.
    #[test]
    fn awkward_text_is_copied_exactly() {
        let pieces = [
            "a",
            "\"",
            "\\",
            "\n",
            "\r\n",
            "\t",
            "\u{0}",
            "\u{1f}",
            "\u{7f}",
            "é",
            "e\u{301}",
            "\u{2028}",
            "😀",
            "</script>",
            "&amp;",
            "'",
            "/",
            " ",
        ];
        let mut state: u32 = 0x9e37_79b9;
        for _ in 0..2_000 {
            let mut text = String::new();
            for _ in 0..(state % 7 + 1) {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                text.push_str(pieces[state as usize % pieces.len()]);
            }
            assert_copies::<Post>(&stored(&with(post(), "content", json!(text))), true);
        }
    }
}

//! Reading an export, and checking all of it before anything is written: every line must be
//! an item of its file's kind as the domain types read it (ids, dates, text limits), and
//! everything it names must be in the export — a comment's or like's post, an author (among
//! the users, or erased). What import keeps meanwhile ([`Catalog`]) is the users, the posts
//! and their counts of comments and likes, and a 128-bit fingerprint per comment and like
//! (to refuse duplicates): not the comments and likes themselves.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::images::{ExportedImages, check_bytes};
use super::{FORMAT, FORMAT_VERSION, Kind, MANIFEST, Manifest, TransferProgress};
use crate::domain::{
    Comment, CommentContent, Deleted, Like, LikeId, Post, PostContent, PostId, Tag, Tags, TenantId,
    Title, Tombstone, User, UserId, Username,
};
use crate::images::{ImageFormat, ImageId, ImageItem};
use crate::store::{TENANT_FIELD, Tenancy, strip_system_properties};
use crate::words::first_lines;

/// Problems recorded in full; the rest are only counted.
const MAX_RECORDED: usize = 1_000;
/// Read buffer of each file.
const BUFFER_BYTES: usize = 1 << 20;

/// One problem of an export: the file, the line (from 1) when it is about one, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub file: String,
    pub line: Option<u64>,
    pub reason: String,
}

impl InputError {
    fn of_file(file: &str, reason: impl Into<String>) -> Self {
        Self {
            file: file.to_owned(),
            line: None,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file, self.reason),
            None => write!(f, "{}: {}", self.file, self.reason),
        }
    }
}

/// Why an export was refused, before anything was written.
#[derive(Debug, Clone)]
pub struct Invalid {
    pub folder: PathBuf,
    /// The first [`MAX_RECORDED`] problems, in file order.
    pub errors: Vec<InputError>,
    /// All problems, recorded or not.
    pub total: usize,
}

impl Invalid {
    pub(super) fn one(folder: &Path, error: InputError) -> Self {
        Self {
            folder: folder.to_owned(),
            errors: vec![error],
            total: 1,
        }
    }

    /// One line per problem (`file:line: reason`), the first `max`, then how many more.
    pub fn lines(&self, max: usize) -> Vec<String> {
        first_lines(&self.errors, max, self.total, |more| {
            format!("... and {more} more problems")
        })
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let problems = if self.total == 1 {
            "1 problem".to_owned()
        } else {
            format!("{} problems", self.total)
        };
        write!(
            f,
            "{} is not a valid export ({problems})",
            self.folder.display()
        )
    }
}

impl std::error::Error for Invalid {}

/// An item of an export, read as its domain type.
#[derive(Debug, Clone)]
pub(super) enum Item {
    User(User),
    Erasure(Tombstone),
    Image(ImageItem),
    Post(Post),
    DeletedPost(Tombstone),
    Comment(Comment),
    Like(Like),
}

/// A line of an export: its item, and the tenant it belongs to in a `multi` export.
#[derive(Debug, Clone)]
pub(super) struct Line {
    pub tenant: Option<TenantId>,
    pub item: Item,
}

/// Reads `manifest.json`.
pub(super) fn read_manifest(folder: &Path) -> Result<Manifest, Invalid> {
    let refuse = |reason: String| Invalid::one(folder, InputError::of_file(MANIFEST, reason));
    let text = std::fs::read_to_string(Manifest::path(folder)).map_err(|e| {
        refuse(match e.kind() {
            std::io::ErrorKind::NotFound => {
                "missing: not an export, or one that did not finish".to_owned()
            }
            _ => format!("cannot read it: {e}"),
        })
    })?;
    let manifest: Manifest =
        serde_json::from_str(&text).map_err(|e| refuse(format!("not a manifest: {e}")))?;
    if manifest.format != FORMAT {
        return Err(refuse(format!(
            "format {:?}, not {FORMAT:?}",
            manifest.format
        )));
    }
    if manifest.version != FORMAT_VERSION {
        return Err(refuse(format!(
            "format version {}; this build reads version {FORMAT_VERSION}",
            manifest.version
        )));
    }
    Ok(manifest)
}

/// The export's identity: the first 16 hex digits of the SHA-256 of its manifest, which
/// names when it was taken and how many items of each kind it holds.
pub(super) fn manifest_digest(folder: &Path) -> Result<String, Invalid> {
    let bytes = std::fs::read(Manifest::path(folder)).map_err(|e| {
        Invalid::one(
            folder,
            InputError::of_file(MANIFEST, format!("cannot read it: {e}")),
        )
    })?;
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &bytes);
    Ok(digest.as_ref()[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

/// The lines of one file of an export, in order.
pub(super) struct Lines {
    kind: Kind,
    layout: Tenancy,
    reader: BufReader<File>,
    text: String,
    number: u64,
}

impl Lines {
    pub fn open(folder: &Path, kind: Kind, layout: Tenancy) -> Result<Self, InputError> {
        let file = File::open(folder.join(kind.file_name()))
            .map_err(|e| InputError::of_file(kind.file_name(), format!("cannot open it: {e}")))?;
        Ok(Self {
            kind,
            layout,
            reader: BufReader::with_capacity(BUFFER_BYTES, file),
            text: String::new(),
            number: 0,
        })
    }

    /// The next line that holds something: its number and what it reads as. Lines that are
    /// empty are skipped (a trailing newline); a read failure is the line's error.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<(u64, Result<Line, String>)> {
        loop {
            self.text.clear();
            self.number += 1;
            match self.reader.read_line(&mut self.text) {
                Ok(0) => return None,
                Ok(_) if self.text.trim_end_matches(['\n', '\r']).is_empty() => continue,
                Ok(_) => return Some((self.number, parse(self.kind, self.layout, &self.text))),
                Err(e) => return Some((self.number, Err(format!("cannot read the line: {e}")))),
            }
        }
    }

    pub fn error(&self, line: u64, reason: String) -> InputError {
        InputError {
            file: self.kind.file_name().to_owned(),
            line: Some(line),
            reason,
        }
    }
}

/// Whether the export has no file of `kind` and its manifest counts none: an export taken
/// before the kind was exported (images), which holds none of it.
pub(super) fn absent_and_empty(folder: &Path, manifest: &Manifest, kind: Kind) -> bool {
    manifest.count(kind) == 0 && !folder.join(kind.file_name()).exists()
}

/// Reads one line of a `kind` file of a `layout` export.
fn parse(kind: Kind, layout: Tenancy, text: &str) -> Result<Line, String> {
    let mut value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    strip_system_properties(&mut value);
    let Value::Object(fields) = &mut value else {
        return Err("not a JSON object".into());
    };
    let tenant = match (layout, fields.remove(TENANT_FIELD)) {
        (Tenancy::Single, None) => None,
        (Tenancy::Single, Some(_)) => {
            return Err(format!(
                "{TENANT_FIELD} in a single-layout export (the manifest says single)"
            ));
        }
        (Tenancy::Multi, Some(Value::String(raw))) => {
            Some(TenantId::parse(&raw).map_err(|e| e.to_string())?)
        }
        (Tenancy::Multi, Some(_)) => return Err(format!("{TENANT_FIELD} must be a string")),
        (Tenancy::Multi, None) => {
            return Err(format!(
                "missing field `{TENANT_FIELD}` (a multi-layout export names each item's tenant)"
            ));
        }
    };
    match fields.get("type") {
        Some(Value::String(t)) if t == kind.item_type() => {}
        Some(Value::String(t)) => {
            return Err(format!(
                "type {t:?}: {} holds items of type {:?} only",
                kind.file_name(),
                kind.item_type()
            ));
        }
        Some(_) => return Err("type must be a string".into()),
        None => return Err("missing field `type`".into()),
    }
    let item = match kind {
        Kind::Users => Item::User(checked_user(read(&value)?)?),
        Kind::Erasures => Item::Erasure(checked_erasure(read(&value)?)?),
        Kind::Images => Item::Image(checked_image(read(&value)?)?),
        Kind::Posts => Item::Post(checked_post(read(&value)?)?),
        Kind::Tombstones => Item::DeletedPost(checked_deleted_post(read(&value)?)?),
        Kind::Comments => Item::Comment(checked_comment(read(&value)?)?),
        Kind::Likes => Item::Like(checked_like(read(&value)?)?),
    };
    Ok(Line { tenant, item })
}

fn read<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, String> {
    T::deserialize(value).map_err(|e| e.to_string())
}

/// `raw` as the API would have stored it (`parse` trims some fields and keeps text in NFC):
/// anything else was not written by the platform.
fn exactly<T>(
    field: &str,
    raw: &str,
    parse: impl Fn(&str) -> Result<T, crate::domain::ValidationError>,
    text: impl Fn(&T) -> &str,
) -> Result<(), String> {
    let parsed = parse(raw).map_err(|e| e.to_string())?;
    if text(&parsed) != raw {
        return Err(format!(
            "{field} is not as the API stores it (without surrounding whitespace, in NFC)"
        ));
    }
    Ok(())
}

fn username(raw: &str) -> Result<(), String> {
    exactly("username", raw, Username::parse, Username::as_str)
}

fn checked_user(user: User) -> Result<User, String> {
    if user.id != user.user_id {
        return Err("a user's id must equal its userId".into());
    }
    username(&user.username)?;
    Ok(user)
}

fn checked_image(image: ImageItem) -> Result<ImageItem, String> {
    if !ImageFormat::ALL
        .iter()
        .any(|format| format.content_type() == image.content_type)
    {
        return Err(format!(
            "contentType {:?} is not a type the blog keeps",
            image.content_type
        ));
    }
    if let Some(rendition) = image
        .renditions
        .iter()
        .find(|r| r.width == 0 || r.width >= image.width)
    {
        return Err(format!(
            "a rendition {} pixels wide of an image {} wide",
            rendition.width, image.width
        ));
    }
    Ok(image)
}

fn checked_erasure(marker: Tombstone) -> Result<Tombstone, String> {
    if marker.of != Deleted::User {
        return Err("an erasure marker has `of: \"user\"`".into());
    }
    if marker.id != Tombstone::erasure_id(&marker.user_id) {
        return Err(format!(
            "the erasure marker of user {:?} has id {}",
            marker.user_id.as_str(),
            Tombstone::erasure_id(&marker.user_id)
        ));
    }
    Ok(marker)
}

fn checked_post(post: Post) -> Result<Post, String> {
    if post.id != post.post_id {
        return Err("a post's id must equal its postId".into());
    }
    exactly("title", &post.title, Title::parse, Title::as_str)?;
    PostContent::parse(&post.content).map_err(|e| e.to_string())?;
    username(&post.user_username)?;
    // Tags as C2 stores them: each normalised, no duplicate, at most ten.
    let tags = Tags::parse(&post.tags).map_err(|e| e.to_string())?;
    if !tags
        .iter()
        .map(Tag::as_str)
        .eq(post.tags.iter().map(String::as_str))
    {
        return Err("tags are not as the API stores them (normalised, each once)".into());
    }
    Ok(post)
}

fn checked_deleted_post(tombstone: Tombstone) -> Result<Tombstone, String> {
    match (&tombstone.of, &tombstone.post_id) {
        (Deleted::Post, Some(post_id)) if post_id.as_str() == tombstone.id => Ok(tombstone),
        (Deleted::Post, _) => Err("a deleted post's tombstone has the post's id as postId".into()),
        (Deleted::User, _) => Err("an erasure marker belongs in erasures.jsonl".into()),
    }
}

fn checked_comment(comment: Comment) -> Result<Comment, String> {
    CommentContent::parse(&comment.content).map_err(|e| e.to_string())?;
    username(&comment.user_username)?;
    Ok(comment)
}

fn checked_like(like: Like) -> Result<Like, String> {
    let expected = LikeId::for_liker(&like.user_id);
    if like.id != expected {
        return Err(format!(
            "the like of user {:?} has id {expected}",
            like.user_id.as_str()
        ));
    }
    username(&like.user_username)?;
    Ok(like)
}

// ---- what the export holds -----------------------------------------------------------------

/// A post's comments and likes in the export: its counts, recomputed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Tally {
    pub comments: u64,
    pub likes: u64,
}

/// What validation keeps of one blog: a `single` export, or one tenant of a `multi` one.
#[derive(Debug, Default)]
pub(super) struct ImportedBlog {
    /// userId -> username.
    pub users: HashMap<UserId, String>,
    pub erased: HashSet<UserId>,
    pub posts: HashMap<PostId, Tally>,
    pub deleted: HashSet<PostId>,
    /// The ids of the images.
    images: HashSet<ImageId>,
    /// Fingerprints of (post, id) of the comments and likes.
    children: HashSet<u128>,
    /// Lines of this blog.
    pub items: u64,
    /// Comments and likes of deleted posts (an export taken while a delete was under way):
    /// not loaded, since the delete removes them anyway.
    pub left_over: u64,
}

impl ImportedBlog {
    /// The author's current username in the export (`None`: not a user of it; erased).
    pub fn username(&self, user_id: &UserId) -> Option<&str> {
        self.users.get(user_id).map(String::as_str)
    }

    /// Lines of this blog that are loaded.
    pub fn loaded(&self) -> u64 {
        self.items - self.left_over
    }

    /// Whether `item` is a comment or like of a deleted post (see [`ImportedBlog::left_over`]).
    pub(crate) fn is_left_over(&self, item: &Item) -> bool {
        match item {
            Item::Comment(comment) => self.deleted.contains(&comment.post_id),
            Item::Like(like) => self.deleted.contains(&like.post_id),
            _ => false,
        }
    }

    /// The counts of `post_id` recomputed from the export's comments and likes.
    pub fn tally(&self, post_id: &PostId) -> Tally {
        self.posts.get(post_id).copied().unwrap_or_default()
    }

    fn check_author(&self, user_id: &UserId) -> Result<(), String> {
        if self.users.contains_key(user_id) || self.erased.contains(user_id) {
            Ok(())
        } else {
            Err(format!(
                "author {:?} is not among the export's users (nor erased)",
                user_id.as_str()
            ))
        }
    }

    fn new_post_id(&self, post_id: &PostId) -> Result<(), String> {
        if self.posts.contains_key(post_id) || self.deleted.contains(post_id) {
            return Err(format!("post {post_id} is in the export twice"));
        }
        Ok(())
    }

    /// Records a comment or like of `post_id`; refuses a second item with the same id in the
    /// post's partition, and an item of a post that is not in the export.
    fn child(
        &mut self,
        post_id: &PostId,
        id: &str,
        what: &str,
    ) -> Result<Option<&mut Tally>, String> {
        let live = self.posts.contains_key(post_id);
        if !live && !self.deleted.contains(post_id) {
            return Err(format!("{what}'s post {post_id} is not in the export"));
        }
        if id == post_id.as_str() || !self.children.insert(fingerprint(post_id.as_str(), id)) {
            return Err(format!(
                "{what} {id} of post {post_id}: another item of the post has this id"
            ));
        }
        Ok(self.posts.get_mut(post_id))
    }

    fn admit(&mut self, item: &Item) -> Result<(), String> {
        match item {
            Item::User(user) => {
                if self
                    .users
                    .insert(user.user_id.clone(), user.username.clone())
                    .is_some()
                {
                    return Err(format!("user {} is in the export twice", user.user_id));
                }
            }
            Item::Erasure(marker) => {
                if !self.erased.insert(marker.user_id.clone()) {
                    return Err(format!("user {} is erased twice", marker.user_id));
                }
            }
            Item::Image(image) => {
                self.check_author(&image.user_id)?;
                if !self.images.insert(image.id.clone()) {
                    return Err(format!("image {} is in the export twice", image.id));
                }
            }
            Item::Post(post) => {
                self.check_author(&post.user_id)?;
                self.new_post_id(&post.post_id)?;
                self.posts.insert(post.post_id.clone(), Tally::default());
            }
            Item::DeletedPost(tombstone) => {
                let post_id = tombstone
                    .post_id
                    .as_ref()
                    .ok_or("a tombstone without postId")?;
                self.new_post_id(post_id)?;
                self.deleted.insert(post_id.clone());
            }
            Item::Comment(comment) => {
                self.check_author(&comment.user_id)?;
                if let Some(tally) = self.child(&comment.post_id, comment.id.as_str(), "comment")? {
                    tally.comments += 1;
                }
            }
            Item::Like(like) => {
                self.check_author(&like.user_id)?;
                if let Some(tally) = self.child(&like.post_id, like.id.as_str(), "like")? {
                    tally.likes += 1;
                }
            }
        }
        self.items += 1;
        if self.is_left_over(item) {
            self.left_over += 1;
        }
        Ok(())
    }
}

/// 128 bits of (post, id): two SipHash digests of the pair with different prefixes. Two
/// different items share one with a chance of about n² / 2¹²⁹, negligible for any export.
fn fingerprint(post_id: &str, id: &str) -> u128 {
    let digest = |salt: u8| {
        let mut hasher = DefaultHasher::new();
        (salt, post_id, id).hash(&mut hasher);
        hasher.finish()
    };
    (u128::from(digest(0)) << 64) | u128::from(digest(1))
}

/// What an export holds, per blog (`None`: a `single` export; else each tenant).
#[derive(Debug, Default)]
pub(super) struct Catalog {
    pub blogs: BTreeMap<Option<TenantId>, ImportedBlog>,
    /// The image items, whose bytes are files of the export.
    pub images: ExportedImages,
}

impl Catalog {
    pub fn blog(&self, tenant: &Option<TenantId>) -> Option<&ImportedBlog> {
        self.blogs.get(tenant)
    }
}

/// Reads the whole export: every line of every file, in [`Kind::ALL`] order, and the line
/// counts against the manifest's. Either all of it is valid, or the problems.
pub(super) fn validate(
    folder: &Path,
    manifest: &Manifest,
    progress: &mut TransferProgress,
) -> Result<Catalog, Invalid> {
    let mut catalog = Catalog::default();
    let mut errors = Vec::new();
    let mut total = 0;
    let mut record = |error: InputError| {
        total += 1;
        if errors.len() < MAX_RECORDED {
            errors.push(error);
        }
    };
    progress.start("import: validating", Some(manifest.total()));
    for kind in Kind::ALL {
        if absent_and_empty(folder, manifest, kind) {
            continue;
        }
        let mut lines = match Lines::open(folder, kind, manifest.layout) {
            Ok(lines) => lines,
            Err(error) => {
                record(error);
                continue;
            }
        };
        let mut count = 0;
        while let Some((number, line)) = lines.next() {
            count += 1;
            let admitted = line.and_then(|line| {
                catalog
                    .blogs
                    .entry(line.tenant.clone())
                    .or_default()
                    .admit(&line.item)?;
                if let Item::Image(image) = line.item {
                    catalog.images.add(line.tenant, image);
                }
                Ok(())
            });
            if let Err(reason) = admitted {
                record(lines.error(number, reason));
            }
            if count % 1_000 == 0 {
                progress.advance(1_000);
            }
        }
        progress.advance(count % 1_000);
        if count != manifest.count(kind) {
            record(InputError::of_file(
                kind.file_name(),
                format!(
                    "{count} items, but the manifest says {} (a truncated or edited export)",
                    manifest.count(kind)
                ),
            ));
        }
    }
    progress.finish();
    for bad in check_bytes(folder, &catalog.images) {
        record(InputError::of_file(&bad.file, bad.reason));
    }
    if total > 0 {
        return Err(Invalid {
            folder: folder.to_owned(),
            errors,
            total,
        });
    }
    Ok(catalog)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user_line() -> Value {
        json!({"id": "ada", "type": "user", "userId": "ada", "username": "Ada"})
    }

    #[test]
    fn reads_an_item_as_its_domain_type_and_names_what_is_wrong() {
        let ok = parse(Kind::Users, Tenancy::Single, &user_line().to_string()).unwrap();
        assert!(matches!(ok.item, Item::User(_)) && ok.tenant.is_none());
        let wrong = |edit: &dyn Fn(&mut Value), layout| {
            let mut value = user_line();
            edit(&mut value);
            parse(Kind::Users, layout, &value.to_string()).unwrap_err()
        };
        assert!(wrong(&|v| v["userId"] = json!("a/b"), Tenancy::Single).contains("userId"));
        assert!(wrong(&|v| v["type"] = json!("userr"), Tenancy::Single).contains("\"userr\""));
        let missing = wrong(
            &|v| {
                v.as_object_mut().unwrap().remove("username");
            },
            Tenancy::Single,
        );
        assert!(missing.contains("missing field `username`"), "{missing}");
        assert!(wrong(&|v| v["username"] = json!(" Ada"), Tenancy::Single).contains("whitespace"));
        assert!(wrong(&|_| {}, Tenancy::Multi).contains("tenantId"));
        assert!(wrong(&|v| v["tenantId"] = json!("t"), Tenancy::Single).contains("single"));
        let stamped = {
            let mut value = user_line();
            value["tenantId"] = json!("t");
            value["_etag"] = json!("\"1\"");
            parse(Kind::Users, Tenancy::Multi, &value.to_string()).unwrap()
        };
        assert_eq!(stamped.tenant.unwrap().as_str(), "t");
        assert!(
            parse(Kind::Users, Tenancy::Single, "{\"id\": ")
                .unwrap_err()
                .starts_with("not JSON")
        );
    }

    #[test]
    fn children_need_their_post_and_an_id_of_their_own() {
        let mut blog = ImportedBlog::default();
        let ada = UserId::parse("ada").unwrap();
        blog.users.insert(ada.clone(), "Ada".into());
        let post = PostId::parse("p").unwrap();
        assert!(
            blog.child(&post, "c", "comment")
                .unwrap_err()
                .contains("not in the export")
        );
        blog.posts.insert(post.clone(), Tally::default());
        assert!(blog.child(&post, "c", "comment").unwrap().is_some());
        assert!(
            blog.child(&post, "c", "like").is_err(),
            "same id in the partition"
        );
        assert!(blog.child(&post, "p", "like").is_err(), "the post's own id");
        assert_ne!(fingerprint("p", "c"), fingerprint("pc", ""));
    }
}

//! The checks of the views the change feed keeps beside the copies: every published post has
//! its copy, equal to its short form, in the partition of each of its tags (`tags`) and of its
//! month (`archive`); no other post copy is there (a draft, a deleted post, a tag taken off);
//! each month's count equals the copies of its partition, and the archive's index holds that
//! count. The full scan gathers what a [`ViewModel`] needs of each post (hashes, never the
//! copies) and hands it every item of the two containers.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use super::checks::{canonical_hash, violation};
use super::repair::Repair;
use super::{Violation, ViolationKind};
use crate::copies::{archive_copy, tag_copy};
use crate::domain::{Month, MonthCount, Post, is_a};
use crate::store::Container;

/// What the scan keeps of one model's views.
#[derive(Default)]
pub(super) struct ViewModel {
    /// (container, partition, post id) -> the hash of the copy that belongs there.
    expected: HashMap<(Container, String, String), u64>,
    /// The keys of `expected` whose copy was found.
    found: HashSet<(Container, String, String)>,
    /// month -> copies held in its partition.
    held: BTreeMap<String, u64>,
    /// month -> its count as its partition holds it.
    counted: BTreeMap<String, u64>,
    /// month -> its count as the index holds it.
    indexed: BTreeMap<String, u64>,
}

impl ViewModel {
    /// Notes where `post` (a source in `posts`) belongs in the views, and what its copy there
    /// must hash to.
    pub(super) fn expect(&mut self, post: &Post) {
        let short = post.short();
        let id = post.id.to_string();
        let hash = |item: Option<Value>| item.map(|item| canonical_hash(&item));
        let Some(published) = post.published_date() else {
            return;
        };
        for tag in &post.tags {
            if let Some(hash) = hash(tag_copy(&short, tag).ok()) {
                self.expected
                    .insert((Container::Tags, tag.clone(), id.clone()), hash);
            }
        }
        let month = Month::of(&published);
        if let Some(hash) = hash(archive_copy(&short, &month).ok()) {
            self.expected
                .insert((Container::Archive, month.key(), id), hash);
        }
    }

    /// One item of `tags` or `archive` (a post copy, or in `archive` a count).
    pub(super) fn item(&mut self, container: Container, item: &Value) -> Option<Violation> {
        let text = |field: &str| item.get(field).and_then(Value::as_str).unwrap_or_default();
        if container == Container::Archive && is_a::<MonthCount>(item) {
            let count = item.get("postCount").and_then(Value::as_u64).unwrap_or(0);
            let of = text("of").to_owned();
            if text("month") == MonthCount::INDEX {
                self.indexed.insert(of, count);
            } else {
                self.counted.insert(of, count);
            }
            return None;
        }
        let (partition, field) = match container {
            Container::Tags => (text("tag"), "tag"),
            _ => (text("month"), "month"),
        };
        let post_id = text("postId");
        if container == Container::Archive {
            *self.held.entry(partition.to_owned()).or_default() += 1;
        }
        let key = (container, partition.to_owned(), post_id.to_owned());
        let repair = Repair::Views {
            post_id: post_id.to_owned(),
            tag: (field == "tag").then(|| partition.to_owned()),
            month: (field == "month").then(|| partition.to_owned()),
        };
        let (kind, detail) = match self.expected.get(&key) {
            None => (
                ViolationKind::OrphanViewCopy,
                format!("post {post_id} is not a published post with this {field}"),
            ),
            Some(hash) => {
                self.found.insert(key.clone());
                if *hash == canonical_hash(item) {
                    return None;
                }
                (
                    ViolationKind::ViewCopyDiffers,
                    format!("differs from the short form of post {post_id}"),
                )
            }
        };
        Some(violation(
            kind,
            container,
            partition,
            post_id,
            detail,
            Some(repair),
        ))
    }

    /// What the items did not show: copies missing, counts that differ from the copies.
    pub(super) fn finish(&mut self) -> Vec<Violation> {
        let mut found: Vec<Violation> = self
            .expected
            .keys()
            .filter(|key| !self.found.contains(*key))
            .map(|(container, partition, post_id)| {
                let repair = Repair::Views {
                    post_id: post_id.clone(),
                    tag: None,
                    month: None,
                };
                violation(
                    ViolationKind::MissingViewCopy,
                    *container,
                    partition,
                    post_id,
                    format!("published post {post_id} has no copy here"),
                    Some(repair),
                )
            })
            .collect();
        let months: std::collections::BTreeSet<&String> = self
            .held
            .keys()
            .chain(self.counted.keys())
            .chain(self.indexed.keys())
            .collect();
        for month in months {
            let held = self.held.get(month).copied().unwrap_or(0);
            let counted = self.counted.get(month).copied().unwrap_or(0);
            let indexed = self.indexed.get(month).copied().unwrap_or(0);
            if held != counted || counted != indexed {
                found.push(violation(
                    ViolationKind::MonthCountMismatch,
                    Container::Archive,
                    month,
                    &Month::from_key(month)
                        .map(|m| MonthCount::id_of(&m))
                        .unwrap_or_default(),
                    format!(
                        "the month holds {held} posts; its count says {counted}, the index {indexed}"
                    ),
                    Some(Repair::MonthCount {
                        month: month.clone(),
                    }),
                ));
            }
        }
        found.sort_by(|a, b| (a.kind, &a.partition, &a.id).cmp(&(b.kind, &b.partition, &b.id)));
        found
    }
}

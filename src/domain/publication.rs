//! Whether a post is out: published (the default, as every post was before drafts), a draft
//! only its author sees, or scheduled to publish itself at a future instant.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Timestamp, ValidationError};

/// A post's `status` as stored and sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PostStatus {
    /// Seen by everyone, in the feed and the author's list.
    #[default]
    Published,
    /// Seen by its author alone.
    Draft,
    /// Seen by its author alone until `publishAt`, then published with no request needed.
    Scheduled,
}

impl PostStatus {
    pub const ALL: [PostStatus; 3] = [
        PostStatus::Published,
        PostStatus::Draft,
        PostStatus::Scheduled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PostStatus::Published => "published",
            PostStatus::Draft => "draft",
            PostStatus::Scheduled => "scheduled",
        }
    }

    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        Self::ALL
            .into_iter()
            .find(|status| status.as_str() == raw)
            .ok_or_else(|| {
                ValidationError::new(
                    "status",
                    format!("must be one of published, draft, scheduled, not {raw:?}"),
                )
            })
    }
}

/// What a writer asks of a post's publication (C2's `status` and `publishAt`). Its form is
/// checked as it is read ([`Publication::parse`]); that a schedule lies in the future is
/// checked by the command that takes it ([`Publication::ahead_of`]), once it knows whether
/// the request is new or the retry of one answered before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publication {
    Publish,
    Draft,
    Schedule(Timestamp),
}

impl Publication {
    /// Reads `status` and `publishAt` as sent. `publishAt` belongs to `scheduled` alone (it is
    /// refused beside another status rather than silently dropped), and must be an ISO-8601
    /// date. Without a `status`, `None`: the caller decides (a new post is published; an edit
    /// keeps the post's publication).
    pub fn parse(
        status: Option<&str>,
        publish_at: Option<&str>,
    ) -> Result<Option<Self>, ValidationError> {
        let status = status.map(PostStatus::parse).transpose()?;
        match (status, publish_at) {
            (None, None) => Ok(None),
            (Some(PostStatus::Scheduled), Some(raw)) => {
                let at = Timestamp::parse(raw).ok_or_else(|| {
                    ValidationError::new("publishAt", format!("not an ISO-8601 date-time: {raw:?}"))
                })?;
                Ok(Some(Publication::Schedule(at)))
            }
            (Some(PostStatus::Scheduled), None) => Err(ValidationError::new(
                "publishAt",
                "a scheduled post needs publishAt, the date-time to publish it",
            )),
            (_, Some(_)) => Err(ValidationError::new(
                "publishAt",
                "publishAt goes with status \"scheduled\" only",
            )),
            (Some(PostStatus::Published), None) => Ok(Some(Publication::Publish)),
            (Some(PostStatus::Draft), None) => Ok(Some(Publication::Draft)),
        }
    }

    /// The publication as asked at `now`: a schedule must lie after it.
    pub fn ahead_of(self, now: Timestamp) -> Result<Self, ValidationError> {
        match self {
            Publication::Schedule(at) if at <= now => Err(ValidationError::new(
                "publishAt",
                format!("must be in the future (it is {now} now)"),
            )),
            asked => Ok(asked),
        }
    }

    pub fn status(self) -> PostStatus {
        match self {
            Publication::Publish => PostStatus::Published,
            Publication::Draft => PostStatus::Draft,
            Publication::Schedule(_) => PostStatus::Scheduled,
        }
    }

    pub fn publish_at(self) -> Option<Timestamp> {
        match self {
            Publication::Schedule(at) => Some(at),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        Timestamp::parse("2026-11-27T08:00:00Z").unwrap()
    }

    #[test]
    fn status_and_publish_at_are_read_together() {
        let parse = |status, at| {
            Publication::parse(status, at)?
                .map(|asked| asked.ahead_of(now()))
                .transpose()
        };
        assert_eq!(parse(None, None), Ok(None));
        assert_eq!(
            parse(Some("published"), None),
            Ok(Some(Publication::Publish))
        );
        assert_eq!(parse(Some("draft"), None), Ok(Some(Publication::Draft)));
        let at = Timestamp::parse("2026-11-27T09:00:00+01:00").unwrap();
        assert_eq!(
            parse(Some("scheduled"), Some("2026-11-27T09:00:00+01:00")),
            Err(ValidationError::new(
                "publishAt",
                format!("must be in the future (it is {} now)", now())
            ))
        );
        assert!(at <= now());
        assert_eq!(
            parse(Some("scheduled"), Some("2026-11-27T08:00:01Z")),
            Ok(Some(Publication::Schedule(
                Timestamp::parse("2026-11-27T08:00:01Z").unwrap()
            )))
        );
        for (status, at, field) in [
            (Some("Draft"), None, "status"),
            (Some(""), None, "status"),
            (Some("scheduled"), None, "publishAt"),
            (Some("scheduled"), Some("tomorrow"), "publishAt"),
            (Some("draft"), Some("2030-01-01T00:00:00Z"), "publishAt"),
            (None, Some("2030-01-01T00:00:00Z"), "publishAt"),
        ] {
            assert_eq!(
                parse(status, at).unwrap_err().field,
                field,
                "{status:?} {at:?}"
            );
        }
    }

    #[test]
    fn status_is_written_in_lower_case() {
        for status in PostStatus::ALL {
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                serde_json::json!(status.as_str())
            );
            assert_eq!(PostStatus::parse(status.as_str()), Ok(status));
        }
    }
}

//! Dates as the platform stores them: UTC, ISO-8601, always 7 fractional digits
//! (`2026-11-22T09:15:02.1234567Z`), so that comparing the strings compares the instants and
//! Cosmos DB can `ORDER BY` them. Readers accept any ISO-8601 form, because the Functions host
//! re-formats dates in trigger payloads (it trims trailing zeros and may rewrite offsets).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::format_description::well_known::{Iso8601, Rfc3339};
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime, UtcOffset};

/// An instant with 100 ns resolution (Cosmos DB and .NET "ticks").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(OffsetDateTime);

const CANONICAL: &[time::format_description::BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:7]Z");

impl Timestamp {
    pub fn now() -> Self {
        Self::from_datetime(OffsetDateTime::now_utc())
    }

    /// Parses any ISO-8601 date-time; one without an offset is taken as UTC.
    pub fn parse(raw: &str) -> Option<Self> {
        let raw = raw.trim();
        OffsetDateTime::parse(raw, &Rfc3339)
            .or_else(|_| OffsetDateTime::parse(raw, &Iso8601::DEFAULT))
            .or_else(|_| PrimitiveDateTime::parse(raw, &Iso8601::DEFAULT).map(|p| p.assume_utc()))
            .ok()
            .map(Self::from_datetime)
    }

    /// Re-writes a date string in the canonical form, or `None` if it is not a date.
    pub fn normalise(raw: &str) -> Option<String> {
        Self::parse(raw).map(|t| t.to_string())
    }

    fn from_datetime(at: OffsetDateTime) -> Self {
        let at = at.to_offset(UtcOffset::UTC);
        let ticks_only = at.nanosecond() / 100 * 100;
        // `replace_nanosecond` only fails for values >= 1e9, which `ticks_only` never is.
        Self(at.replace_nanosecond(ticks_only).unwrap_or(at))
    }

    pub fn unix_nanos(&self) -> i128 {
        self.0.unix_timestamp_nanos()
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0.format(CANONICAL).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Responses carry the canonical form only; the pattern says so to clients.
impl utoipa::PartialSchema for Timestamp {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
            .pattern(Some(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{7}Z$"))
            .description(Some(
                "UTC, ISO-8601 with exactly 7 fractional digits, so that string order is time order.",
            ))
            .examples(["2026-11-22T09:15:02.1234567Z"])
            .into()
    }
}

impl utoipa::ToSchema for Timestamp {}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        Self::parse(&raw)
            .ok_or_else(|| serde::de::Error::custom(format!("not an ISO-8601 date: {raw:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_seven_fractional_digits() {
        let t = Timestamp::parse("2026-11-22T09:15:02.1234567Z").unwrap();
        assert_eq!(t.to_string(), "2026-11-22T09:15:02.1234567Z");
        let whole = Timestamp::parse("2026-11-22T09:15:02Z").unwrap();
        assert_eq!(whole.to_string(), "2026-11-22T09:15:02.0000000Z");
    }

    #[test]
    fn normalises_forms_the_functions_host_produces() {
        for (raw, canonical) in [
            ("2026-11-22T09:15:02.12Z", "2026-11-22T09:15:02.1200000Z"),
            (
                "2026-11-22T09:15:02.1234567+00:00",
                "2026-11-22T09:15:02.1234567Z",
            ),
            (
                "2026-11-22T10:15:02.5+01:00",
                "2026-11-22T09:15:02.5000000Z",
            ),
            ("2026-11-22T09:15:02", "2026-11-22T09:15:02.0000000Z"),
            (
                "2026-11-22T09:15:02.123456789Z",
                "2026-11-22T09:15:02.1234567Z",
            ),
        ] {
            assert_eq!(
                Timestamp::normalise(raw).as_deref(),
                Some(canonical),
                "{raw}"
            );
        }
        assert_eq!(Timestamp::normalise("yesterday"), None);
    }

    #[test]
    fn string_order_is_time_order() {
        let early = Timestamp::parse("2026-11-22T09:15:02.9Z").unwrap();
        let late = Timestamp::parse("2026-11-22T09:15:10.1Z").unwrap();
        assert!(early < late);
        assert!(early.to_string() < late.to_string());
    }

    #[test]
    fn now_is_canonical() {
        let now = Timestamp::now().to_string();
        assert_eq!(now.len(), "2026-11-22T09:15:02.1234567Z".len());
        assert_eq!(Timestamp::normalise(&now), Some(now));
    }
}

//! Dates as the platform stores them: UTC, ISO-8601, always 7 fractional digits
//! (`2026-11-22T09:15:02.1234567Z`), so that comparing the strings compares the instants and
//! Cosmos DB can `ORDER BY` them. Readers accept any ISO-8601 form, because the Functions host
//! re-formats dates in trigger payloads (it trims trailing zeros and may rewrite offsets).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::format_description::well_known::{Iso8601, Rfc3339};
use time::macros::format_description;
use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};

/// An instant with 100 ns resolution (Cosmos DB and .NET "ticks").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(OffsetDateTime);

const CANONICAL: &[time::format_description::BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:7]Z");

/// The canonical form's length: `2026-11-22T09:15:02.1234567Z`.
const CANONICAL_LEN: usize = 28;
/// The canonical form's separators and where they stand; every other byte is a digit.
const SEPARATORS: [(usize, u8); 7] = [
    (4, b'-'),
    (7, b'-'),
    (10, b'T'),
    (13, b':'),
    (16, b':'),
    (19, b'.'),
    (27, b'Z'),
];

impl Timestamp {
    pub fn now() -> Self {
        Self::from_datetime(OffsetDateTime::now_utc())
    }

    /// Parses any ISO-8601 date-time; one without an offset is taken as UTC.
    pub fn parse(raw: &str) -> Option<Self> {
        if let Some(canonical) = Self::parse_canonical(raw) {
            return Some(canonical);
        }
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

    /// Whether `raw` is a date in the canonical form, the form serialising it writes.
    pub(super) fn is_canonical(raw: &str) -> bool {
        Self::parse_canonical(raw).is_some()
    }

    /// The canonical form, read by position: stored items hold their dates in it, and every
    /// item read parses them, so this spares the general parser. `None` for any other form.
    fn parse_canonical(raw: &str) -> Option<Self> {
        let bytes = raw.as_bytes();
        if bytes.len() != CANONICAL_LEN || SEPARATORS.iter().any(|&(at, sep)| bytes[at] != sep) {
            return None;
        }
        let number = |from: usize, to: usize| {
            bytes[from..to].iter().try_fold(0u32, |n, &digit| {
                digit
                    .is_ascii_digit()
                    .then(|| n * 10 + u32::from(digit - b'0'))
            })
        };
        let small = |from: usize, to: usize| u8::try_from(number(from, to)?).ok();
        let year = i32::try_from(number(0, 4)?).ok()?;
        let month = Month::try_from(small(5, 7)?).ok()?;
        let date = Date::from_calendar_date(year, month, small(8, 10)?).ok()?;
        let time = Time::from_hms_nano(
            small(11, 13)?,
            small(14, 16)?,
            small(17, 19)?,
            number(20, 27)? * 100,
        )
        .ok()?;
        Some(Self(PrimitiveDateTime::new(date, time).assume_utc()))
    }

    /// The canonical form, written by position (every item written or sent formats its
    /// dates); `None` for a year outside 0–9999, which the general formatter writes.
    fn write_canonical<'a>(&self, out: &'a mut [u8; CANONICAL_LEN]) -> Option<&'a str> {
        let at = self.0;
        let year = u32::try_from(at.year()).ok().filter(|&year| year <= 9999)?;
        let fields = [
            (0, 4, year),
            (5, 2, u32::from(u8::from(at.month()))),
            (8, 2, u32::from(at.day())),
            (11, 2, u32::from(at.hour())),
            (14, 2, u32::from(at.minute())),
            (17, 2, u32::from(at.second())),
            (20, 7, at.nanosecond() / 100),
        ];
        for (from, width, mut value) in fields {
            for digit in out[from..from + width].iter_mut().rev() {
                *digit = b'0' + (value % 10) as u8;
                value /= 10;
            }
        }
        for (position, separator) in SEPARATORS {
            out[position] = separator;
        }
        std::str::from_utf8(out).ok()
    }

    pub fn unix_nanos(&self) -> i128 {
        self.0.unix_timestamp_nanos()
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut canonical = [0; CANONICAL_LEN];
        if let Some(text) = self.write_canonical(&mut canonical) {
            return f.write_str(text);
        }
        let text = self.0.format(CANONICAL).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut canonical = [0; CANONICAL_LEN];
        match self.write_canonical(&mut canonical) {
            Some(text) => serializer.serialize_str(text),
            None => serializer.collect_str(self),
        }
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
        deserializer.deserialize_str(DateVisitor)
    }
}

/// Reads the date where the text is, borrowed when it can be, instead of copying it first.
struct DateVisitor;

impl serde::de::Visitor<'_> for DateVisitor {
    type Value = Timestamp;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, raw: &str) -> Result<Timestamp, E> {
        Timestamp::parse(raw).ok_or_else(|| E::custom(format!("not an ISO-8601 date: {raw:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Instants spread over the years the canonical form holds, and its edges.
    fn instants() -> Vec<Timestamp> {
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut nanos: Vec<i128> = (0..5_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                // Years 0 to 9999, in ticks.
                let span: i128 = 315_537_897_600 * 1_000_000_000;
                i128::from(state) % span - 62_167_219_200 * 1_000_000_000
            })
            .collect();
        nanos.extend([0, -62_167_219_200_000_000_000, 253_402_300_799_999_999_900]);
        nanos
            .into_iter()
            .map(|n| {
                Timestamp::from_datetime(OffsetDateTime::from_unix_timestamp_nanos(n).unwrap())
            })
            .collect()
    }

    #[test]
    fn the_canonical_form_by_position_equals_the_general_one() {
        for instant in instants() {
            let general = instant.0.format(CANONICAL).unwrap();
            assert_eq!(instant.to_string(), general);
            assert_eq!(
                serde_json::to_string(&instant).unwrap(),
                format!("\"{general}\"")
            );
            let general_parse = OffsetDateTime::parse(&general, &Rfc3339).unwrap();
            assert_eq!(Timestamp::parse_canonical(&general), Some(instant));
            assert_eq!(Timestamp::from_datetime(general_parse), instant);
        }
        for other in [
            "2026-11-22T09:15:02.123456Z",
            "2026-11-22T09:15:02.1234567+01:00",
            "2026-13-22T09:15:02.1234567Z",
            "2026-02-30T09:15:02.1234567Z",
            "2026-11-22T24:15:02.1234567Z",
            "2026-11-22T09:15:60.1234567Z",
            "2026-11-22 09:15:02.1234567Z",
            "2026-11-22T09:15:02.12345a7Z",
            "+026-11-22T09:15:02.1234567Z",
        ] {
            assert_eq!(Timestamp::parse_canonical(other), None, "{other}");
        }
    }

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

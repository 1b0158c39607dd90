//! The archive's words: a month of publication (`2026-11`, what `/archive/{yyyy}/{mm}` names)
//! and the count of a month's posts as the archive keeps it.

use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Timestamp, ValidationError};

/// A calendar month in UTC, years 1–9999: the archive's unit. Its text form `yyyy-mm` sorts
/// as time does, like the canonical dates it is cut from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Month {
    year: u16,
    month: u8,
}

impl Month {
    /// The month of a route, `{yyyy}/{mm}`: four digits and two, as the archive's links write
    /// them (`2026/11`, never `2026/1`), so that each month has one address.
    pub fn from_path(year: &str, month: &str) -> Result<Self, ValidationError> {
        let digits = |text: &str, len: usize| {
            (text.len() == len && text.bytes().all(|b| b.is_ascii_digit()))
                .then(|| text.parse::<u16>().ok())
                .flatten()
        };
        let refused = || {
            ValidationError::new(
                "month",
                format!("expected a year of four digits and a month 01–12, not {year}/{month}"),
            )
        };
        let year = digits(year, 4).filter(|y| *y >= 1).ok_or_else(refused)?;
        let month = digits(month, 2)
            .filter(|m| (1..=12).contains(m))
            .ok_or_else(refused)?;
        Ok(Self {
            year,
            month: month as u8,
        })
    }

    /// The month of `key` (`2026-11`), or `None` for any other text.
    pub fn from_key(key: &str) -> Option<Self> {
        let (year, month) = key.split_once('-')?;
        Self::from_path(year, month).ok()
    }

    /// The month `at` falls in (UTC).
    pub fn of(at: &Timestamp) -> Self {
        // The canonical form starts `yyyy-mm`; a year past 9999 cannot be stored anyway.
        Self::from_key(&at.to_string()[..7]).unwrap_or(Self { year: 1, month: 1 })
    }

    /// `yyyy-mm`: the archive partition of the month's posts.
    pub fn key(&self) -> String {
        format!("{:04}-{:02}", self.year, self.month)
    }

    pub fn year(&self) -> u16 {
        self.year
    }

    pub fn month(&self) -> u8 {
        self.month
    }

    /// `yyyy/mm`: the month in a route.
    pub fn path(&self) -> String {
        format!("{:04}/{:02}", self.year, self.month)
    }
}

impl fmt::Display for Month {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key())
    }
}

/// How many published posts a month holds, as the archive keeps it: once in the month's own
/// partition, changed in the same transactional batch as the copies it counts (so a repeated
/// or failed change-feed batch cannot skew it), and once more in the index partition that
/// `GET /api/archive` reads whole, copied from the first while its `revision` is newer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MonthCount {
    /// `count-yyyy-mm`: never a post's id (a UUID), in either partition.
    pub id: String,
    #[serde(rename = "type")]
    pub kind: super::items::MonthKind,
    /// The partition that holds this count: the month itself, or the archive's index.
    pub month: String,
    /// The month counted, `yyyy-mm`.
    pub of: String,
    /// Published posts of the month.
    pub post_count: u64,
    /// Raised by one on every change of the count: the index takes a newer one only.
    pub revision: u64,
}

impl MonthCount {
    pub const TYPE: &'static str = super::items::MonthKind::TAG;
    /// The archive partition that holds every month's count: one read lists the months.
    pub const INDEX: &'static str = "index";

    /// The id of `month`'s count, in its partition and in the index.
    pub fn id_of(month: &Month) -> String {
        format!("count-{}", month.key())
    }

    /// A month's count as its own partition keeps it.
    pub fn new(month: &Month, post_count: u64, revision: u64) -> Self {
        Self {
            id: Self::id_of(month),
            kind: super::items::MonthKind,
            month: month.key(),
            of: month.key(),
            post_count,
            revision,
        }
    }

    /// The same count as the index keeps it.
    pub fn in_index(&self) -> Self {
        Self {
            month: Self::INDEX.to_owned(),
            ..self.clone()
        }
    }
}

impl super::Typed for MonthCount {
    const TYPE: &'static str = super::items::MonthKind::TAG;
}

/// A month of the archive as `GET /api/archive` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveMonth {
    /// The month, `yyyy-mm` (UTC).
    #[schema(pattern = r"^[0-9]{4}-(0[1-9]|1[0-2])$", example = "2026-11")]
    pub month: String,
    /// Its published posts.
    #[schema(minimum = 1)]
    pub post_count: u64,
}

impl From<&MonthCount> for ArchiveMonth {
    fn from(count: &MonthCount) -> Self {
        Self {
            month: count.of.clone(),
            post_count: count.post_count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_month_is_four_digits_and_two() {
        let month = Month::from_path("2026", "11").unwrap();
        assert_eq!(
            MonthCount::new(&month, 1, 1).in_index().month,
            MonthCount::INDEX
        );
        assert_eq!(month.key(), "2026-11");
        assert_eq!(month.path(), "2026/11");
        for (year, month) in [
            ("2026", "1"),
            ("26", "11"),
            ("2026", "13"),
            ("2026", "00"),
            ("0000", "01"),
            ("+026", "01"),
            ("2026", "1a"),
        ] {
            assert!(Month::from_path(year, month).is_err(), "{year}/{month}");
        }
    }

    #[test]
    fn a_date_falls_in_its_utc_month() {
        let at = Timestamp::parse("2026-12-31T23:30:00-02:00").unwrap();
        assert_eq!(Month::of(&at).key(), "2027-01");
        assert_eq!(
            Month::from_key("2026-02"),
            Month::from_path("2026", "02").ok()
        );
        assert_eq!(Month::from_key("index"), None);
    }
}

//! The queries the operations need, as a small description that each backend translates:
//! equality/inequality filters on top-level fields, one sort field, an offset, paging.
//! Values always travel as parameters, never inside the query text (the case study's stored
//! procedure concatenated ids into SQL; that is an injection hole).

use serde_json::Value;

use super::{Container, PartitionKey, RawItem};

#[derive(Debug, Clone, PartialEq)]
pub enum QueryScope {
    /// One logical partition: what every V3 read uses.
    Partition(PartitionKey),
    /// Every partition: only for the username fan-out and `rebuild`.
    CrossPartition,
    /// Every logical partition whose hierarchical key starts with these components (fewer
    /// than the container's key levels): Cosmos DB routes it only to the physical partitions
    /// holding that prefix.
    Prefix(PartitionKey),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterOp {
    Eq,
    Ne,
    /// The field equals one of the values of a JSON array.
    In,
}

impl FilterOp {
    pub(crate) fn sql(self) -> &'static str {
        match self {
            FilterOp::Eq => "=",
            FilterOp::Ne => "!=",
            FilterOp::In => "IN",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    /// A top-level field name from the platform's own code (`type`, `userId`, ...).
    pub field: &'static str,
    pub op: FilterOp,
    pub value: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortOrder {
    Ascending,
    Descending,
}

impl SortOrder {
    pub(crate) fn sql(self) -> &'static str {
        match self {
            SortOrder::Ascending => "ASC",
            SortOrder::Descending => "DESC",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub scope: QueryScope,
    pub filters: Vec<Filter>,
    pub order_by: Option<(&'static str, SortOrder)>,
    /// Items to skip before the first page (used to find what lies beyond the feed's bound).
    pub offset: u32,
}

impl Query {
    pub fn in_partition(pk: PartitionKey) -> Self {
        Self::new(QueryScope::Partition(pk))
    }

    pub fn cross_partition() -> Self {
        Self::new(QueryScope::CrossPartition)
    }

    pub fn in_prefix(prefix: PartitionKey) -> Self {
        Self::new(QueryScope::Prefix(prefix))
    }

    /// The same query in another scope.
    pub fn scoped(mut self, scope: QueryScope) -> Self {
        self.scope = scope;
        self
    }

    fn new(scope: QueryScope) -> Self {
        Self {
            scope,
            filters: Vec::new(),
            order_by: None,
            offset: 0,
        }
    }

    pub fn of_type(self, item_type: &'static str) -> Self {
        self.filter("type", FilterOp::Eq, Value::from(item_type))
    }

    /// Items of any of `item_types`.
    pub fn of_types(self, item_types: &[&'static str]) -> Self {
        self.filter("type", FilterOp::In, Value::from(item_types.to_vec()))
    }

    pub fn filter(mut self, field: &'static str, op: FilterOp, value: impl Into<Value>) -> Self {
        debug_assert!(is_identifier(field), "field {field:?} is not an identifier");
        self.filters.push(Filter {
            field,
            op,
            value: value.into(),
        });
        self
    }

    pub fn order_by(mut self, field: &'static str, order: SortOrder) -> Self {
        debug_assert!(is_identifier(field), "field {field:?} is not an identifier");
        self.order_by = Some((field, order));
        self
    }

    pub fn skip(mut self, offset: u32) -> Self {
        self.offset = offset;
        self
    }

    /// The Cosmos DB NoSQL text of the query and its parameters (`@p0`, `@p1`, ...).
    /// Paging and the partition are passed to the service separately.
    pub(crate) fn to_cosmos_sql(&self) -> (String, Vec<(String, Value)>) {
        let mut sql = String::from("SELECT * FROM c");
        let mut params = Vec::new();
        for (i, filter) in self.filters.iter().enumerate() {
            let name = format!("@p{i}");
            sql.push_str(if i == 0 { " WHERE " } else { " AND " });
            match (&filter.value, filter.op) {
                (Value::Array(values), FilterOp::In) => {
                    // One parameter per value: `c.type IN (@p0_0, @p0_1)`.
                    let names: Vec<String> =
                        (0..values.len()).map(|j| format!("{name}_{j}")).collect();
                    sql.push_str(&format!("c.{} IN ({})", filter.field, names.join(", ")));
                    params.extend(names.into_iter().zip(values.iter().cloned()));
                }
                _ => {
                    sql.push_str(&format!("c.{} {} {name}", filter.field, filter.op.sql()));
                    params.push((name, filter.value.clone()));
                }
            }
        }
        if let Some((field, order)) = self.order_by {
            sql.push_str(&format!(" ORDER BY c.{field} {}", order.sql()));
        }
        if self.offset > 0 {
            // Cosmos DB only accepts OFFSET together with LIMIT.
            sql.push_str(&format!(" OFFSET {} LIMIT {}", self.offset, i32::MAX));
        }
        (sql, params)
    }
}

fn is_identifier(field: &str) -> bool {
    let mut chars = field.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    pub max_items: u32,
    pub continuation: Option<String>,
}

impl PageRequest {
    pub fn first(max_items: u32) -> Self {
        Self {
            max_items,
            continuation: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Resumes after the last item; `None` when there is nothing more.
    pub continuation: Option<String>,
}

impl<T> Page<T> {
    /// The page of a point read: the item alone, or none, with nothing after it.
    pub fn of_one(item: Option<T>) -> Self {
        Self {
            items: item.into_iter().collect(),
            continuation: None,
        }
    }
}

/// What one logical partition held when a page of it was read. Handed back with the same
/// query, it lets the store answer that nothing changed, without reading the page again: how
/// a reader keeps a page it read and still answers exactly what the store holds. Only a store
/// that counts the changes of each partition makes one (the embedded store); the token names
/// the partition, so a version of one partition never vouches for another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionVersion {
    container: Container,
    /// The whole key as the store keys it (a tenant's view includes the tenant).
    partition: String,
    /// Counts every write to the partition, by any process.
    changes: i64,
    /// The page's first item to expire, in Unix seconds: from then on the page is no longer
    /// what the store answers, though nothing was written.
    live_until: Option<i64>,
    /// The store's count of all commits when the version was read: while it has not moved,
    /// nothing was written anywhere, and the store need not look at `changes`.
    commits: u64,
}

impl PartitionVersion {
    pub(crate) fn new(
        container: Container,
        partition: String,
        changes: i64,
        live_until: Option<i64>,
        commits: u64,
    ) -> Self {
        Self {
            container,
            partition,
            changes,
            live_until,
            commits,
        }
    }

    /// The same version, vouched for again when the store had counted `commits`.
    pub(crate) fn renewed(&self, commits: u64) -> Self {
        Self {
            commits,
            ..self.clone()
        }
    }

    /// When the page read at this version stops being the answer though nothing is written
    /// (its first item's expiry, Unix seconds). Only the store's tests ask.
    #[cfg(test)]
    pub(crate) fn live_until(&self) -> Option<i64> {
        self.live_until
    }

    /// Whether a page read at this version is still what the store answers, the partition
    /// having been written `changes` times by now (`now`: Unix seconds).
    pub(crate) fn still_holds(
        &self,
        container: Container,
        partition: &str,
        changes: i64,
        now: i64,
    ) -> bool {
        self.changes == changes && self.is_of(container, partition, now)
    }

    /// Whether a page read at this version is still what the store answers, nothing having
    /// been committed since: the store's count of commits is still `commits`.
    pub(crate) fn holds_without_commits(
        &self,
        container: Container,
        partition: &str,
        commits: u64,
        now: i64,
    ) -> bool {
        self.holds_at(commits, now) && self.is_of(container, partition, now)
    }

    /// Whether a page read at this version is still what the store answers, whatever its
    /// query: the store's count of commits is still `commits` (nothing was written anywhere),
    /// and its items are all still live at `now`.
    pub(crate) fn holds_at(&self, commits: u64, now: i64) -> bool {
        self.commits == commits && self.is_live(now)
    }

    /// Whether it is a version of this partition, and its page's items are all still live.
    fn is_of(&self, container: Container, partition: &str, now: i64) -> bool {
        self.container == container && self.partition == partition && self.is_live(now)
    }

    fn is_live(&self, now: i64) -> bool {
        self.live_until.is_none_or(|until| now < until)
    }
}

/// A page of stored JSON text ([`crate::store::Store::query_json`]), or the word that the
/// partition is unchanged since the version the caller holds.
#[derive(Debug, Clone)]
pub enum JsonPage {
    /// Nothing in the partition changed since the version handed in: the page read then is
    /// still the answer. `renewed`: the same version as the store counts it now, to hand in
    /// from then on instead (it is answered without a look at the partition).
    Unchanged { renewed: Option<PartitionVersion> },
    Read {
        page: Page<RawItem>,
        /// The partition's version as read, for the next call; `None` when the store keeps
        /// no versions (Cosmos DB) or the query spans several partitions.
        version: Option<PartitionVersion>,
    },
}

impl JsonPage {
    /// A page read from a store that keeps no versions.
    pub fn unversioned(page: Page<RawItem>) -> Self {
        Self::Read {
            page,
            version: None,
        }
    }

    /// How many items the answer carries (none when unchanged).
    pub fn item_count(&self) -> usize {
        match self {
            Self::Unchanged { .. } => 0,
            Self::Read { page, .. } => page.items.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_parameterised_cosmos_sql() {
        let query = Query::cross_partition()
            .filter("userId", FilterOp::Eq, "x' OR 1=1 --")
            .filter("userUsername", FilterOp::Ne, "ada")
            .order_by("creationDate", SortOrder::Descending);
        let (sql, params) = query.to_cosmos_sql();
        assert_eq!(
            sql,
            "SELECT * FROM c WHERE c.userId = @p0 AND c.userUsername != @p1 ORDER BY c.creationDate DESC"
        );
        assert_eq!(params[0], ("@p0".to_owned(), Value::from("x' OR 1=1 --")));
        assert_eq!(params.len(), 2);
    }

    #[test]
    fn an_in_filter_has_one_parameter_per_value() {
        let query =
            Query::in_partition(PartitionKey::single("p")).of_types(&["comment", "tombstone"]);
        let (sql, params) = query.to_cosmos_sql();
        assert_eq!(sql, "SELECT * FROM c WHERE c.type IN (@p0_0, @p0_1)");
        assert_eq!(
            params,
            [
                ("@p0_0".to_owned(), Value::from("comment")),
                ("@p0_1".to_owned(), Value::from("tombstone")),
            ]
        );
    }

    #[test]
    fn a_partition_version_holds_for_its_partition_unchanged_and_unexpired_only() {
        let version = PartitionVersion::new(Container::Posts, "[\"p\"]".into(), 7, Some(100), 0);
        assert!(version.still_holds(Container::Posts, "[\"p\"]", 7, 99));
        for (container, partition, changes, now, why) in [
            (Container::Posts, "[\"p\"]", 7, 100, "expired"),
            (Container::Posts, "[\"p\"]", 8, 0, "written since"),
            (Container::Posts, "[\"q\"]", 7, 0, "another partition"),
            (Container::Users, "[\"p\"]", 7, 0, "another container"),
        ] {
            assert!(
                !version.still_holds(container, partition, changes, now),
                "{why}"
            );
        }
        let forever = PartitionVersion::new(Container::Posts, "[\"p\"]".into(), 7, None, 0);
        assert!(forever.still_holds(Container::Posts, "[\"p\"]", 7, i64::MAX));
    }

    #[test]
    fn offset_comes_with_a_limit() {
        let query = Query::in_partition(PartitionKey::single("post"))
            .of_type("post")
            .order_by("creationDate", SortOrder::Descending)
            .skip(100);
        let (sql, _) = query.to_cosmos_sql();
        assert!(sql.ends_with("ORDER BY c.creationDate DESC OFFSET 100 LIMIT 2147483647"));
    }
}

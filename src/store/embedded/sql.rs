//! The translation of a [`Query`] into SQL over the items' JSON bodies, with keyset
//! continuation tokens.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rusqlite::Connection;
use rusqlite::types::Value as SqlValue;
use serde_json::Value;

use super::schema::LIVE;
use super::sqlite::{parse_body, raw_body, sql_error};
use crate::domain::{Timestamp, is_stored_id};
use crate::store::{
    Container, Filter, FilterOp, Page, PageRequest, Query, QueryScope, RawItem, SortOrder,
    StoreError, StoreResult,
};

/// The SQL expression of a top-level field of the item body.
fn field_expr(field: &str) -> String {
    // Every write checks that the body's id is the key's (`checked_item`): the key column
    // answers for it, through the primary key (import asks a partition for ids).
    if field == "id" {
        return "id".to_owned();
    }
    // Field names come from the platform's code and are identifiers (checked by `Query`).
    format!("json_extract(body, '$.{field}')")
}

fn filter_param(value: &Value) -> SqlValue {
    match value {
        Value::String(s) => SqlValue::Text(s.clone()),
        Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => SqlValue::Integer(i),
            None => SqlValue::Real(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::Null => SqlValue::Null,
        other => SqlValue::Text(other.to_string()),
    }
}

/// Keyset position after the last item of a page: (sort value, partition key, id).
fn encode_position(position: &(String, String, String)) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(position).unwrap_or_default())
}

fn decode_position(token: &str) -> StoreResult<(String, String, String)> {
    URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| StoreError::BadRequest("malformed continuation token".into()))
}

/// Whether a position is one this store could have issued for `query` (the last item of a
/// page of it), field by field: its partition key is in the query's scope, its id is one the
/// store can hold, and its sort value is what the sort field holds (a date, or nothing, for
/// the `...Date` fields the lists sort by; nothing when unsorted). A token edited or
/// made up is refused, not read as some other page.
fn check_position(query: &Query, sort: &str, pk: &str, id: &str) -> StoreResult<()> {
    let in_scope = match &query.scope {
        QueryScope::Partition(expected) => pk == expected.to_json_array(),
        QueryScope::Prefix(prefix) => {
            let (low, high) = prefix.prefix_range();
            (low.as_str()..high.as_str()).contains(&pk)
        }
        QueryScope::CrossPartition => serde_json::from_str::<Vec<Value>>(pk).is_ok(),
    };
    let sorted_by = match query.order_by {
        None => sort.is_empty(),
        Some((field, _)) if field.ends_with("Date") => {
            sort.is_empty() || Timestamp::parse(sort).is_some()
        }
        Some(_) => true,
    };
    if in_scope && sorted_by && is_stored_id(id) {
        Ok(())
    } else {
        Err(StoreError::BadRequest(
            "continuation token not issued for this query".into(),
        ))
    }
}

pub(super) fn run_query(
    conn: &Connection,
    container: Container,
    query: &Query,
    page: &PageRequest,
) -> StoreResult<Page<Value>> {
    run_query_as(conn, container, query, page, |body| parse_body(&body)).map(|read| read.page)
}

/// [`run_query`], each item handed over as its stored JSON text.
pub(super) fn run_query_json(
    conn: &Connection,
    container: Container,
    query: &Query,
    page: &PageRequest,
) -> StoreResult<PageRead<RawItem>> {
    run_query_as(conn, container, query, page, raw_body)
}

/// A page as read, and until when it stays the answer if nothing is written.
pub(super) struct PageRead<T> {
    pub(super) page: Page<T>,
    /// The earliest expiry (Unix seconds) among the rows read, the one past the page
    /// included: when it passes, that row leaves the answer. Rows before the page's start
    /// cannot change it (the continuation is a position, not a count), except under an
    /// `OFFSET`, whose skipped rows are not read: then the page has no such bound, `None`
    /// together with `bounded: false`.
    pub(super) live_until: Option<i64>,
    pub(super) bounded: bool,
}

/// The SQL of one page of a query: its text, its parameters, and the items it is for (it
/// asks for one row more, which says whether a page follows).
struct PageSelect {
    sql: String,
    params: Vec<SqlValue>,
    wanted: usize,
    /// Whether an `OFFSET` skips rows that are not read.
    skips: bool,
}

/// A page of the items matching `query`, each body turned into `T` by `decode`.
fn run_query_as<T>(
    conn: &Connection,
    container: Container,
    query: &Query,
    page: &PageRequest,
    decode: impl Fn(String) -> StoreResult<T>,
) -> StoreResult<PageRead<T>> {
    let PageSelect {
        sql,
        params,
        wanted,
        skips,
    } = page_select(container, query, page)?;
    let mut statement = conn.prepare_cached(&sql).map_err(sql_error)?;
    let mut rows = statement
        .query(rusqlite::params_from_iter(params))
        .map_err(sql_error)?;
    let mut items = Vec::with_capacity(wanted.min(128));
    // Only the last item's position makes the continuation token, and only if one more row
    // follows it (the query asks for one row more than the page).
    let mut last = None;
    let mut has_more = false;
    let mut live_until: Option<i64> = None;
    while let Some(row) = rows.next().map_err(sql_error)? {
        if let Some(expires_at) = row.get::<_, Option<i64>>(4).map_err(sql_error)? {
            live_until = Some(live_until.map_or(expires_at, |until| until.min(expires_at)));
        }
        if items.len() == wanted {
            has_more = true;
            break;
        }
        items.push(decode(row.get::<_, String>(3).map_err(sql_error)?)?);
        if items.len() == wanted {
            last = Some((
                row.get::<_, String>(0).map_err(sql_error)?,
                row.get::<_, String>(1).map_err(sql_error)?,
                row.get::<_, String>(2).map_err(sql_error)?,
            ));
        }
    }
    let continuation = last.filter(|_| has_more).map(|pos| encode_position(&pos));
    Ok(PageRead {
        page: Page {
            items,
            continuation,
        },
        live_until,
        bounded: !skips,
    })
}

const TYPE_FIELD: &str = "type";

/// The types of a filter for items of any of several types (`type IN (…)`).
fn type_list(filter: &Filter) -> Option<&[Value]> {
    match (filter.field, filter.op, &filter.value) {
        (TYPE_FIELD, FilterOp::In, Value::Array(values)) => Some(values),
        _ => None,
    }
}

/// The types of a sorted query of one partition for items of several types (a post's
/// comments and its tombstone), each once: read as one ordered arm per type and merged.
/// `None` for any other query.
fn merged_types(query: &Query) -> Option<Vec<Value>> {
    if query.order_by.is_none() || !matches!(query.scope, QueryScope::Partition(_)) {
        return None;
    }
    let mut lists = query.filters.iter().filter_map(type_list);
    let (Some(values), None) = (lists.next(), lists.next()) else {
        return None;
    };
    let mut types: Vec<Value> = Vec::new();
    for value in values {
        if !types.contains(value) {
            types.push(value.clone());
        }
    }
    (types.len() > 1).then_some(types)
}

fn page_select(container: Container, query: &Query, page: &PageRequest) -> StoreResult<PageSelect> {
    let sort_expr = match query.order_by {
        Some((field, _)) => format!("COALESCE({}, '')", field_expr(field)),
        None => "''".to_owned(),
    };
    let descending = matches!(query.order_by, Some((_, SortOrder::Descending)));
    let mut sql = format!(
        "SELECT {sort_expr}, pk, id, body, expires_at FROM items WHERE container = ? AND {LIVE}"
    );
    let mut params: Vec<SqlValue> = vec![SqlValue::Text(container.name().to_owned())];
    match &query.scope {
        QueryScope::Partition(pk) => {
            sql.push_str(" AND pk = ?");
            params.push(SqlValue::Text(pk.to_json_array()));
        }
        // The keys under a prefix are one range of the primary key's text form.
        QueryScope::Prefix(prefix) => {
            let (low, high) = prefix.prefix_range();
            sql.push_str(" AND pk >= ? AND pk < ?");
            params.extend([SqlValue::Text(low), SqlValue::Text(high)]);
        }
        QueryScope::CrossPartition => {}
    }
    let merged = merged_types(query);
    for filter in &query.filters {
        if merged.is_some() && type_list(filter).is_some() {
            continue;
        }
        let expr = field_expr(filter.field);
        match (&filter.value, filter.op) {
            (Value::Null, FilterOp::Eq) => sql.push_str(&format!(" AND {expr} IS NULL")),
            (Value::Null, FilterOp::Ne) => sql.push_str(&format!(" AND {expr} IS NOT NULL")),
            (Value::Array(values), FilterOp::In) => {
                let marks = vec!["?"; values.len()].join(", ");
                sql.push_str(&format!(" AND {expr} IN ({marks})"));
                params.extend(values.iter().map(filter_param));
            }
            (value, op) => {
                sql.push_str(&format!(" AND {expr} {} ?", op.sql()));
                params.push(filter_param(value));
            }
        }
    }
    let direction = if descending { "DESC" } else { "ASC" };
    // Without a sort field the order is the primary key's, (pk, id): keyed on that alone, each
    // page is one range of the key (or of `items_by_user`, which ends with it), not a scan and
    // sort of the whole container per page.
    let sorted = query.order_by.is_some();
    if let Some(token) = &page.continuation {
        let (sort, pk, id) = decode_position(token)?;
        check_position(query, &sort, &pk, &id)?;
        let after = if descending { "<" } else { ">" };
        if sorted {
            sql.push_str(&format!(" AND ({sort_expr}, pk, id) {after} (?, ?, ?)"));
            params.push(SqlValue::Text(sort));
        } else {
            sql.push_str(&format!(" AND (pk, id) {after} (?, ?)"));
        }
        params.extend([SqlValue::Text(pk), SqlValue::Text(id)]);
    }
    if let Some(types) = merged {
        // One arm per type, each read in order from `items_by_type_and_sort_date`; SQLite
        // merges the arms (`MERGE (UNION ALL)`) instead of sorting the rows of an `IN`.
        let arm = format!("{sql} AND {} = ?", field_expr(TYPE_FIELD));
        sql = vec![arm; types.len()].join(" UNION ALL ");
        params = types
            .iter()
            .flat_map(|item_type| {
                let mut arm_params = params.clone();
                arm_params.push(filter_param(item_type));
                arm_params
            })
            .collect();
        sql.push_str(&format!(
            " ORDER BY 1 {direction}, 2 {direction}, 3 {direction} LIMIT ? OFFSET ?"
        ));
    } else {
        let sort_key = if sorted {
            format!("1 {direction}, ")
        } else {
            String::new()
        };
        sql.push_str(&format!(
            " ORDER BY {sort_key}pk {direction}, id {direction} LIMIT ? OFFSET ?"
        ));
    }
    let max_items = page.max_items.max(1);
    params.push(SqlValue::Integer(i64::from(max_items) + 1));
    let offset = if page.continuation.is_some() {
        0
    } else {
        query.offset
    };
    params.push(SqlValue::Integer(i64::from(offset)));
    Ok(PageSelect {
        sql,
        params,
        wanted: max_items as usize,
        skips: offset > 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{PartitionKey, SortOrder};

    /// What SQLite plans for `select`, one line per step.
    fn plan(conn: &Connection, select: &PageSelect) -> Vec<String> {
        let mut statement = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", select.sql))
            .unwrap();
        statement
            .query_map(rusqlite::params_from_iter(&select.params), |row| {
                row.get::<_, String>(3)
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// An empty store's tables, indexes and planner statistics, in memory.
    fn empty_store() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(super::super::schema::SCHEMA).unwrap();
        super::super::schema::add_expiry(&conn).unwrap();
        super::super::schema::set_planner_stats(&conn).unwrap();
        conn
    }

    #[test]
    fn a_page_of_a_partition_is_read_in_order_without_sorting() {
        let conn = empty_store();
        let newest_first = Query::in_partition(PartitionKey::single("u"))
            .of_type("post")
            .order_by("creationDate", SortOrder::Descending);
        let oldest_first = Query::in_partition(PartitionKey::single("p"))
            .of_type("comment")
            .order_by("creationDate", SortOrder::Ascending);
        let children_first = Query::in_partition(PartitionKey::single("p"))
            .of_types(&["like", "tombstone"])
            .order_by("creationDate", SortOrder::Ascending);
        let next = |pk: &str| {
            let date = "2026-01-01T00:00:00.0000000Z";
            encode_position(&(date.into(), format!("[\"{pk}\"]"), "x".into()))
        };
        for (query, pk) in [
            (newest_first, "u"),
            (oldest_first, "p"),
            (children_first, "p"),
        ] {
            for continuation in [None, Some(next(pk))] {
                let page = PageRequest {
                    max_items: 50,
                    continuation,
                };
                let select = page_select(Container::Users, &query, &page).unwrap();
                let plan = plan(&conn, &select);
                assert!(
                    plan.iter()
                        .any(|step| step.contains("items_by_type_and_sort_date")),
                    "{plan:?}"
                );
                assert!(
                    !plan.iter().any(|step| step.contains("TEMP B-TREE")),
                    "{plan:?}"
                );
            }
        }
    }

    #[test]
    fn items_of_several_types_come_merged_in_order_page_after_page() {
        let conn = empty_store();
        let pk = PartitionKey::single("p");
        let types = ["like", "comment", "tombstone", "like"];
        let mut wanted = Vec::new();
        for n in 0..40 {
            let item_type = types[n % types.len()];
            // Some dates repeat, so that the id breaks ties.
            let date = format!("2026-01-{:02}T00:00:00.0000000Z", 1 + (n * 7) % 13);
            let id = format!("{n:03}");
            let body = serde_json::json!({"id": id, "type": item_type, "creationDate": date});
            conn.execute(
                "INSERT INTO items (container, pk, id, body, lsn, ts) VALUES ('posts', ?, ?, ?, ?, 0)",
                rusqlite::params![pk.to_json_array(), id, body.to_string(), n as i64],
            )
            .unwrap();
            if item_type != "comment" {
                wanted.push((date, id));
            }
        }
        for order in [SortOrder::Ascending, SortOrder::Descending] {
            let query = Query::in_partition(pk.clone())
                .of_types(&["like", "tombstone", "like"])
                .order_by("creationDate", order);
            let mut read = Vec::new();
            let mut page = PageRequest::first(3);
            loop {
                let found = run_query(&conn, Container::Posts, &query, &page).unwrap();
                read.extend(found.items.iter().map(|item| {
                    let field = |name: &str| item[name].as_str().unwrap().to_owned();
                    (field("creationDate"), field("id"))
                }));
                match found.continuation {
                    Some(token) => page.continuation = Some(token),
                    None => break,
                }
            }
            let mut expected = wanted.clone();
            expected.sort();
            if order == SortOrder::Descending {
                expected.reverse();
            }
            assert_eq!(read, expected, "{order:?}");
        }
    }
}

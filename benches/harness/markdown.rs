//! The Markdown pieces every section of the report is written with: a section's heading and
//! intro, a table's head, a note under it. A leaf: the phases that write a section of their own
//! and the report that puts the sections together both use it, and it uses none of them.

use std::fmt::Write as _;

/// Writes a Markdown table's header row (`columns`: the names between ` | `) and the rule
/// under it, one `---` a column.
pub fn table_head(out: &mut String, columns: &str) {
    let _ = writeln!(out, "| {columns} |");
    let _ = writeln!(out, "|{}", "---|".repeat(columns.split(" | ").count()));
}

/// A `### title` and the head of the table under it.
pub fn titled_table(out: &mut String, title: &str, columns: &str) {
    let _ = writeln!(out, "### {title}\n");
    table_head(out, columns);
}

/// A paragraph of its own after a table: how to read its figures.
pub fn note(out: &mut String, text: &str) {
    let _ = writeln!(out, "\n{text}\n");
}

/// Opens a report section: its `## heading` and the paragraph that says what it measures.
pub fn section(out: &mut String, heading: &str, intro: &str) {
    let _ = writeln!(out, "\n## {heading}\n");
    let _ = writeln!(out, "{intro}\n");
}

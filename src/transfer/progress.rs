//! How far a long transfer is: a progress bar when stderr is a terminal; otherwise, if
//! asked, a line every [`LINE_EVERY`] items (logs, CI, a test waiting for the import to be
//! halfway), else nothing.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

const ITEMS: (&str, &str) = ("item", "items");

/// Items between two progress lines when stderr is not a terminal.
pub(crate) const LINE_EVERY: u64 = 10_000;

pub struct TransferProgress {
    display: Display,
    phase: &'static str,
    done: u64,
    total: Option<u64>,
    next_line: u64,
    /// What the phase counts ("item", "source").
    unit: (&'static str, &'static str),
}

enum Display {
    Hidden,
    Bar(ProgressBar),
    Lines,
}

impl TransferProgress {
    /// Reports nothing (library callers, tests).
    pub fn hidden() -> Self {
        Self::with(Display::Hidden)
    }

    /// A bar on a terminal; elsewhere, lines on stderr if `lines`, else nothing.
    pub fn on_stderr(lines: bool) -> Self {
        Self::with(if std::io::stderr().is_terminal() {
            Display::Bar(ProgressBar::hidden())
        } else if lines {
            Display::Lines
        } else {
            Display::Hidden
        })
    }

    fn with(display: Display) -> Self {
        Self {
            display,
            phase: "",
            done: 0,
            total: None,
            next_line: LINE_EVERY,
            unit: ITEMS,
        }
    }

    /// Starts a phase of `total` items (unknown: `None`), ending the one before.
    pub fn start(&mut self, phase: &'static str, total: Option<u64>) {
        self.start_counting(phase, total, ITEMS);
    }

    /// Starts a phase that counts `unit` (singular, plural) rather than items.
    pub fn start_counting(
        &mut self,
        phase: &'static str,
        total: Option<u64>,
        unit: (&'static str, &'static str),
    ) {
        self.finish();
        self.phase = phase;
        self.unit = unit;
        self.done = 0;
        self.total = total;
        self.next_line = LINE_EVERY;
        if let Display::Bar(bar) = &mut self.display {
            *bar = match total {
                Some(total) => ProgressBar::new(total).with_style(
                    ProgressStyle::with_template(&format!(
                        "{{msg}} [{{bar:30}}] {{human_pos}}/{{human_len}} {}, {{per_sec}}, {{eta}} left",
                        unit.1
                    ))
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
                ),
                None => ProgressBar::new_spinner().with_style(
                    ProgressStyle::with_template(&format!(
                        "{{spinner}} {{msg}}: {{human_pos}} {}, {{per_sec}}",
                        unit.1
                    ))
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                ),
            };
            bar.set_message(phase);
            bar.enable_steady_tick(Duration::from_millis(200));
        }
    }

    /// `items` more are done. Past the phase's total (an export whose files hold more lines
    /// than its manifest says: a broken line, an edited file) the total grows with them: the
    /// count never reads "6 of 5".
    pub fn advance(&mut self, items: u64) {
        self.done += items;
        if self.total.is_some_and(|total| self.done > total) {
            self.total = Some(self.done);
            if let Display::Bar(bar) = &self.display {
                bar.set_length(self.done);
            }
        }
        match &self.display {
            Display::Bar(bar) => bar.inc(items),
            Display::Lines if self.done >= self.next_line => {
                self.next_line = (self.done / LINE_EVERY + 1) * LINE_EVERY;
                self.line();
            }
            _ => {}
        }
    }

    /// Ends the current phase (its bar is cleared; a last line says where it ended).
    pub fn finish(&mut self) {
        if self.phase.is_empty() {
            return;
        }
        match &self.display {
            Display::Bar(bar) => bar.finish_and_clear(),
            Display::Lines => self.line(),
            Display::Hidden => {}
        }
        self.phase = "";
    }

    fn line(&self) {
        let (one, many) = self.unit;
        match self.total {
            Some(total) => eprintln!(
                "{}: {} of {}",
                self.phase,
                self.done,
                crate::words::count(total, one, many)
            ),
            None => eprintln!(
                "{}: {}",
                self.phase,
                crate::words::count(self.done, one, many)
            ),
        }
    }
}

impl Drop for TransferProgress {
    fn drop(&mut self) {
        if let Display::Bar(bar) = &self.display {
            bar.finish_and_clear();
        }
    }
}

//! The terminal screen of `deltabus top` (ratatui over crossterm): one block per endpoint
//! with its heading and a table of its lines, redrawn every interval; `q`, Esc or Ctrl-C
//! quits and restores the terminal.

use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table};
use ratatui::Frame;

use super::{cells, heading, refresh_all, Endpoint, HEADER};
use crate::error::{Error, Result};

/// Runs the screen until the user quits.
///
/// # Errors
/// [`Error::Io`] when the terminal cannot be drawn on.
pub(super) async fn run(endpoints: &mut [Endpoint], client: &reqwest::Client, interval: Duration) -> Result<()> {
    let mut terminal = ratatui::try_init().map_err(Error::Io)?;
    let result = async {
        loop {
            refresh_all(endpoints, client).await;
            terminal.draw(|f| draw(f, endpoints)).map_err(Error::Io)?;
            if quit_within(interval).await? {
                return Ok(());
            }
        }
    }
    .await;
    ratatui::try_restore().map_err(Error::Io)?;
    result
}

/// Waits up to `interval` for a key: whether it asked to quit.
async fn quit_within(interval: Duration) -> Result<bool> {
    let deadline = Instant::now() + interval;
    tokio::task::spawn_blocking(move || -> std::io::Result<bool> {
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            if !event::poll(left)? {
                break;
            }
            if let Event::Key(k) = event::read()? {
                let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                if k.kind == KeyEventKind::Press && (matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) || ctrl_c) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    })
    .await
    .map_err(|e| Error::Internal(format!("key reader: {e}")))?
    .map_err(Error::Io)
}

fn draw(f: &mut Frame<'_>, endpoints: &[Endpoint]) {
    let heights: Vec<Constraint> = endpoints
        .iter()
        .map(|e| Constraint::Length(e.shown.as_ref().map_or(3, |(lines, _)| lines.len() as u16 + 4)))
        .chain([Constraint::Min(1)])
        .collect();
    let areas = Layout::vertical(heights).split(f.area());
    for (e, area) in endpoints.iter().zip(areas.iter()) {
        let block = Block::default().borders(Borders::ALL).title(heading(e));
        match &e.shown {
            Ok((lines, _)) => {
                let header = Row::new(HEADER).style(Style::default().add_modifier(Modifier::BOLD));
                let rows = lines.iter().map(|l| Row::new(cells(l)));
                let widths = [
                    Constraint::Length(8),
                    Constraint::Min(12),
                    Constraint::Length(10),
                    Constraint::Length(12),
                    Constraint::Length(9),
                    Constraint::Length(22),
                    Constraint::Length(12),
                    Constraint::Length(9),
                    Constraint::Length(6),
                ];
                f.render_widget(Table::new(rows, widths).header(header).block(block), *area);
            }
            Err(why) => f.render_widget(Paragraph::new(why.as_str()).block(block), *area),
        }
    }
    if let Some(last) = areas.last() {
        f.render_widget(Paragraph::new("q quits · rates over the last interval"), *last);
    }
}

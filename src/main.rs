use std::process::ExitCode;

use clap::{Parser, Subcommand};
use cosmos_blog::settings::{Settings, StoreSettings};
use cosmos_blog::startup::{Application, open_store, shutdown_signal};
use cosmos_blog::{changefeed, telemetry};

/// Blog platform backend: an Azure Functions custom handler, or a standalone server with an
/// embedded store.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    #[command(flatten)]
    serve: Settings,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API (the default).
    Serve,
    /// Re-derive every copy (post copies in users and feed, usernames in posts) from the
    /// source items.
    Rebuild {
        #[command(flatten)]
        store: StoreSettings,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    telemetry::init();
    let cli = Cli::parse();
    let result = match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(&cli.serve).await,
        Command::Rebuild { store } => rebuild(&store).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(settings: &Settings) -> anyhow::Result<()> {
    let app = Application::build(settings).await?;
    app.run_until(shutdown_signal()).await
}

async fn rebuild(settings: &StoreSettings) -> anyhow::Result<()> {
    let store = open_store(settings).await?;
    let report = changefeed::rebuild(&store).await?;
    for line in report.log_lines("rebuild") {
        println!("{line}");
    }
    Ok(())
}

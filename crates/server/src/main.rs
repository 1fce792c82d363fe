//! `atrium`: serve (default), migrate, and administrative commands.
use anyhow::Context;
use atrium_server::{Config, open_existing_database};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "atrium", version, about = "Atrium management backend", after_help = atrium_server::config::ENVIRONMENT_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve both interfaces (the default).
    #[command(after_help = atrium_server::config::ENVIRONMENT_HELP)]
    Serve,
    /// Apply pending database migrations and exit.
    #[command(after_help = atrium_server::config::ENVIRONMENT_HELP)]
    Migrate,
    /// Fill the database with synthetic tenants, their employees and orders (benchmarks, demos).
    ///
    /// The tenants are new, under one new partner; with `--shared-per-tenant N` they are spread
    /// over `--partners` new partners (each on a share plan) and collect as sub-merchants, each
    /// with N WeChat Pay payments paid over 2026 and profit-shared with the platform (1 %) and
    /// its partner (2.5 %), 5 % of them partly refunded — what `bench/earnings.sh` reads:
    /// `atrium seed --partners 50 --tenants 1000 --employees-per-tenant 0 --shared-per-tenant 1000`.
    /// Employees and orders (0 for none) are added to the new tenants either way.
    Seed {
        #[arg(long, default_value_t = 1000)]
        tenants: i64,
        #[arg(long, default_value_t = 1000)]
        employees_per_tenant: i64,
        /// Orders for each new tenant: pending, paid offline, partially refunded and closed.
        #[arg(long, default_value_t = 0)]
        orders_per_tenant: i64,
        /// Shared sub-merchant payments for each new tenant (with their shares, refunds and
        /// returns of shares).
        #[arg(long, default_value_t = 0)]
        shared_per_tenant: i64,
        /// How many new partners the tenants are spread over (with --shared-per-tenant only).
        #[arg(long, requires = "shared_per_tenant", value_parser = clap::value_parser!(i64).range(1..))]
        partners: Option<i64>,
    },
    /// Manage administrators.
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
    /// Manage document projects and API tokens of the document interface.
    Docs {
        #[command(subcommand)]
        command: atrium_server::docs_cli::DocsCommand,
    },
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Create a platform administrator.
    Create {
        #[arg(long)]
        username: String,
        /// The password; read from ATRIUM_ADMIN_PASSWORD when omitted.
        #[arg(long, env = "ATRIUM_ADMIN_PASSWORD", hide_env_values = true)]
        password: String,
    },
}

#[tokio::main]
async fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().filter_or("ATRIUM_LOG", "info")).format(log_line).init();
    if let Err(e) = run(Cli::parse()).await {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

/// One log record as one line, as env_logger writes it by default (`[time LEVEL target]
/// message`), with every control character of the message escaped: text from a request or a
/// platform inside a message can never start a line of its own.
fn log_line(buf: &mut env_logger::fmt::Formatter, record: &log::Record) -> std::io::Result<()> {
    use std::io::Write;
    let style = buf.default_level_style(record.level());
    let message = record.args().to_string();
    writeln!(buf, "[{} {style}{:<5}{style:#} {}] {}", buf.timestamp(), record.level(), record.target(), atrium_kernel::one_line(&message))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let command = cli.command.unwrap_or(Command::Serve);
    // Only `serve` and `migrate` may create a database; the others work on the server's.
    let config = match command {
        Command::Serve | Command::Migrate => Config::from_env()?,
        _ => Config::from_env_existing()?,
    };
    match command {
        Command::Serve => serve(config).await,
        Command::Migrate => {
            let db = atrium_store::Db::connect(&config.database_url, 1)?;
            let ran = tokio::task::spawn_blocking(move || db.migrate()).await??;
            println!("applied {ran} migration(s) to the {}", atrium_server::database_name(&config.database_url));
            Ok(())
        }
        Command::Seed { tenants, employees_per_tenant, orders_per_tenant, shared_per_tenant, partners } => {
            let db_config = config.clone();
            let started = std::time::Instant::now();
            let seeded =
                tokio::task::spawn_blocking(move || -> anyhow::Result<(i64, i64, i64, Option<atrium_store::seed::SeededShares>)> {
                    let db = open_existing_database(&db_config)?;
                    let fail = |e: atrium_kernel::Error| anyhow::anyhow!("{e}");
                    let (first, last, shared) = if shared_per_tenant > 0 {
                        let shared =
                            atrium_store::seed::seed_shares(&db, partners.unwrap_or(1), tenants, shared_per_tenant).map_err(fail)?;
                        let (first, last) = shared.tenants;
                        atrium_store::seed::seed_employees(&db, first, last, employees_per_tenant).map_err(fail)?;
                        (first, last, Some(shared))
                    } else {
                        let (first, last) = atrium_store::seed::seed_org(&db, tenants, employees_per_tenant).map_err(fail)?;
                        (first, last, None)
                    };
                    let orders = match orders_per_tenant {
                        0 => 0,
                        n => atrium_store::seed::seed_orders(&db, first, last, n).map_err(fail)?,
                    };
                    Ok((first, last, orders, shared))
                })
                .await??;
            let (first, last, orders, shared) = seeded;
            let shared = match shared {
                None => String::new(),
                Some(s) => format!(
                    " and {} ({}, {}, {}) under partners {} to {}",
                    count(s.payments, "shared payment"),
                    count(s.shares, "share"),
                    count(s.refunds, "refund"),
                    count(s.returns, "return"),
                    s.partners.0,
                    s.partners.1
                ),
            };
            println!(
                "seeded {} with {} each and {}{shared} in {:.1}s",
                tenant_range(first, last),
                count(employees_per_tenant, "employee"),
                count(orders, "order"),
                started.elapsed().as_secs_f64()
            );
            Ok(())
        }
        Command::Admin { command: AdminCommand::Create { username, password } } => {
            let db_config = config.clone();
            let db = tokio::task::spawn_blocking(move || open_existing_database(&db_config)).await??;
            let identity =
                atrium_server::identity_service(&config, &db, atrium_server::password_hasher(&config), "http://localhost", None, None)?;
            let user = identity.create_platform_admin(&username, &password).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            println!("created platform administrator {} (id {})", user.username, user.id);
            Ok(())
        }
        Command::Docs { command } => atrium_server::docs_cli::run(command, &config).await,
    }
}

/// `tenants 1 to 3`, `tenant 4`, `no tenants`.
fn tenant_range(first: i64, last: i64) -> String {
    match last.cmp(&first) {
        std::cmp::Ordering::Less => "no tenants".to_owned(),
        std::cmp::Ordering::Equal => format!("tenant {first}"),
        std::cmp::Ordering::Greater => format!("tenants {first} to {last}"),
    }
}

/// `1 order`, `3 orders`.
fn count(n: i64, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

async fn serve(config: Config) -> anyhow::Result<()> {
    // Listening for the stop signals before anything says the server is up, so a signal sent
    // as soon as it is up stops it gracefully too.
    let mut signals = StopSignals::new();
    let running = atrium_server::start(config).await?;
    if let Some(password) = &running.bootstrap_password {
        // Printed once, to the terminal only: this is the only copy.
        println!("\n  First start: created platform administrator 'admin' with password: {password}\n  Log in and change it.\n");
    }
    println!("atrium is listening on http://{}  (Swagger UI: http://{}/swagger-ui/)", running.addr, running.addr);
    let (handle, jobs, timeout) = (running.handle.clone(), running.jobs.clone(), running.shutdown_timeout);
    tokio::spawn(async move {
        let signal = signals.next().await;
        log::info!("{signal}: shutting down: finishing in-flight requests (at most {timeout:?}); no new background jobs");
        jobs.stop_claiming();
        tokio::select! {
            () = handle.stop(true) => {}
            again = signals.next() => {
                log::warn!("{again} again: stopping at once, dropping in-flight requests");
                handle.stop(false).await;
            }
        }
    });
    running.server.await.context("server task failed")??;
    if !running.jobs.wait(timeout).await {
        log::warn!("background jobs still running after {timeout:?}; exiting anyway");
    }
    log::info!("stopped");
    Ok(())
}

/// SIGINT (Ctrl-C) and SIGTERM, both of which stop gracefully, listened for from creation on.
struct StopSignals {
    #[cfg(unix)]
    unix: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl StopSignals {
    fn new() -> StopSignals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
                (Ok(int), Ok(term)) => StopSignals { unix: Some((int, term)) },
                (Err(e), _) | (_, Err(e)) => {
                    log::warn!("cannot listen for SIGINT and SIGTERM ({e}); Ctrl-C still stops the server");
                    StopSignals { unix: None }
                }
            }
        }
        #[cfg(not(unix))]
        StopSignals {}
    }

    /// The next stop signal, by name.
    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        if let Some((int, term)) = &mut self.unix {
            return tokio::select! {
                _ = int.recv() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            };
        }
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    }
}

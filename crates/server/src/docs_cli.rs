//! `atrium docs …`: manage the document interface's projects and API tokens from the shell.
//! What the CLI creates belongs to the platform party; what it lists is every party's, with
//! the owning party in a column, as a platform user sees them. Token values are printed once,
//! on creation, as the last line of output; nothing else ever shows them.
use crate::{Config, docs_service, open_existing_database};
use atrium_docs::{ApiToken, CreateTokenRequest, Owner};
use atrium_kernel::StrEnum;
use atrium_kernel::{Page, PageRequest};
use chrono::SecondsFormat;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum DocsCommand {
    /// Document projects (collections).
    Project {
        #[command(subcommand)]
        command: ProjectCommand,
    },
    /// API tokens for /api/docs/.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
}

#[derive(Subcommand)]
pub enum ProjectCommand {
    /// Create a project; prints its id as the last line.
    Create {
        #[arg(long)]
        name: String,
    },
    /// List every party's projects, with the owning party.
    List,
}

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Issue a token; prints it, once, as the last line.
    Create {
        #[arg(long)]
        name: String,
        /// Limit the token to this project (repeat for several); all projects when omitted.
        #[arg(long = "project", value_name = "ID")]
        projects: Vec<i64>,
        /// Let the token expire after this many days; it never expires when omitted.
        #[arg(long, value_name = "D", value_parser = crate::config::number::<u32>(Some(1), Some(36500)))]
        expires_in_days: Option<u32>,
    },
    /// List every party's tokens, with the owning party (never their values).
    List,
    /// Revoke a token by id (any party's).
    Revoke { id: i64 },
}

pub async fn run(command: DocsCommand, config: &Config) -> anyhow::Result<()> {
    let db_config = config.clone();
    let db = tokio::task::spawn_blocking(move || open_existing_database(&db_config)).await??;
    let docs = docs_service(&db);
    let owner = Owner::PLATFORM;
    match command {
        DocsCommand::Project { command: ProjectCommand::Create { name } } => {
            let p = docs.create_project(None, owner, &name).await?;
            println!("created document project {:?}", p.name);
            println!("{}", p.id);
        }
        DocsCommand::Project { command: ProjectCommand::List } => {
            let projects = all_pages(|page| docs.list_projects(atrium_kernel::Party::Platform, page)).await?;
            println!("{:>8}  {:<14}  {:<20}  NAME", "ID", "OWNER", "CREATED");
            for p in projects {
                println!("{:>8}  {:<14}  {:<20}  {}", p.id, owner_of(&p.owner), time(p.created_at), p.name);
            }
        }
        DocsCommand::Token { command: TokenCommand::Create { name, projects, expires_in_days } } => {
            let expires_at = expires_in_days.map(|d| docs.now() + chrono::Duration::days(i64::from(d)));
            let project_ids = (!projects.is_empty()).then_some(projects);
            let issued = docs.create_token(None, owner, CreateTokenRequest { name, project_ids, expires_at }).await?;
            let t = &issued.token;
            println!(
                "created API token {} {:?} for {}; expires {}",
                t.id,
                t.name,
                projects_of(t),
                t.expires_at.map(time).unwrap_or("never".into())
            );
            println!("Send it as 'Authorization: Token <token>'. It is shown only now; store it safely:");
            println!("{}", issued.secret);
        }
        DocsCommand::Token { command: TokenCommand::List } => {
            let tokens = all_pages(|page| docs.list_tokens(atrium_kernel::Party::Platform, page)).await?;
            let now = docs.now();
            println!("{:>8}  {:<14}  {:<8}  {:<20}  {:<20}  {:<16}  NAME", "ID", "OWNER", "STATUS", "EXPIRES", "LAST USED", "PROJECTS");
            for t in tokens {
                println!(
                    "{:>8}  {:<14}  {:<8}  {:<20}  {:<20}  {:<16}  {}",
                    t.id,
                    owner_of(&t.owner),
                    t.status(now).as_str(),
                    t.expires_at.map(time).unwrap_or("never".into()),
                    t.last_used_at.map(time).unwrap_or("never".into()),
                    projects_of(&t),
                    t.name
                );
            }
        }
        DocsCommand::Token { command: TokenCommand::Revoke { id } } => {
            let t = docs.revoke_token(None, atrium_kernel::Party::Platform, id).await?;
            println!("revoked API token {} {:?}", t.id, t.name);
        }
    }
    Ok(())
}

/// Every item of a paged list.
async fn all_pages<T, F, Fut>(mut fetch: F) -> anyhow::Result<Vec<T>>
where
    F: FnMut(PageRequest) -> Fut,
    Fut: std::future::Future<Output = atrium_kernel::Result<Page<T>>>,
{
    let mut all = Vec::new();
    for n in 1.. {
        let page = fetch(PageRequest::new(Some(n), Some(i64::from(PageRequest::MAX_SIZE)))?).await?;
        let done = page.items.len() < PageRequest::MAX_SIZE as usize;
        all.extend(page.items);
        if done || all.len() as i64 >= page.total {
            break;
        }
    }
    Ok(all)
}

/// `platform`, `partner 3`, `tenant 12`.
fn owner_of(owner: &Owner) -> String {
    match owner.party_id() {
        None => owner.party_type().as_str().to_owned(),
        Some(id) => format!("{} {id}", owner.party_type().as_str()),
    }
}

fn projects_of(t: &ApiToken) -> String {
    match t.projects.ids() {
        None => "all projects".into(),
        Some(ids) => format!("projects {}", ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")),
    }
}

fn time(t: atrium_kernel::Timestamp) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

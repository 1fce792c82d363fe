//! The document interface through [`DocsService`], its storage doubled with the crate's
//! `mock` feature (an in-memory store): a tenant creates two projects and issues an API token
//! limited to one of them; the token's holder writes documents into it and reads them back as
//! a tree. The token reaches nothing else: writing into the other project is refused.
//!
//! Run it with `cargo run -p atrium-docs --example document_api`.
use atrium_docs::{
    ApiToken, CreateDocumentRequest, CreateTokenRequest, DocsConfig, DocsService, Document, DocumentNode, DocumentSummary, MockDocsRepo,
    Owner, Project,
};
use atrium_kernel::{Id, Party, SystemClock};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// What the in-memory store holds.
#[derive(Default)]
struct Tables {
    projects: Vec<Project>,
    tokens: Vec<(String, ApiToken)>,
    documents: Vec<Document>,
}

fn lock(tables: &Mutex<Tables>) -> MutexGuard<'_, Tables> {
    tables.lock().unwrap_or_else(PoisonError::into_inner)
}

fn next_id(len: usize) -> Id {
    Id::try_from(len).unwrap_or(Id::MAX) + 1
}

/// Document storage in memory: each expectation does what the store's method does.
fn docs_repo() -> MockDocsRepo {
    let tables: Arc<Mutex<Tables>> = Arc::default();
    let mut repo = MockDocsRepo::new();
    let t = tables.clone();
    repo.expect_create_project().returning(move |new| {
        let mut t = lock(&t);
        let project = Project { id: next_id(t.projects.len()), name: new.name, owner: new.owner, created_at: new.at, updated_at: new.at };
        t.projects.push(project.clone());
        Ok(project)
    });
    let t = tables.clone();
    repo.expect_get_project().returning(move |id| Ok(lock(&t).projects.iter().find(|p| p.id == id).cloned()));
    let t = tables.clone();
    repo.expect_create_token().returning(move |new| {
        let mut t = lock(&t);
        let token = ApiToken {
            id: next_id(t.tokens.len()),
            name: new.name,
            owner: new.owner,
            projects: new.projects,
            created_by: new.created_by,
            created_at: new.created_at,
            expires_at: new.expires_at,
            revoked_at: None,
            last_used_at: None,
            suspended: None,
        };
        // Only the value's hash is stored.
        t.tokens.push((new.token_hash, token.clone()));
        Ok(token)
    });
    let t = tables.clone();
    repo.expect_find_token_by_hash()
        .returning(move |hash| Ok(lock(&t).tokens.iter().find(|(h, _)| h == hash).map(|(_, token)| token.clone())));
    let t = tables.clone();
    repo.expect_touch_token().returning(move |id, at, _stale_before| {
        let mut t = lock(&t);
        let token = t.tokens.iter_mut().find(|(_, token)| token.id == id);
        Ok(token.map(|(_, token)| token.last_used_at = Some(at)).is_some())
    });
    let t = tables.clone();
    repo.expect_document_depth()
        .returning(move |project_id, id| Ok(lock(&t).documents.iter().find(|d| d.id == id && d.project_id == project_id).map(|d| d.depth)));
    let t = tables.clone();
    repo.expect_insert_document().returning(move |new| {
        let mut t = lock(&t);
        let document = Document {
            id: next_id(t.documents.len()),
            project_id: new.project_id,
            parent_id: new.parent_id,
            name: new.name,
            content: new.content,
            sort: new.sort,
            depth: new.depth,
            author_token_id: new.author_token_id,
            created_at: new.at,
            updated_at: new.at,
        };
        t.documents.push(document.clone());
        Ok(document)
    });
    repo.expect_list_documents().returning(move |project_id| {
        let t = lock(&tables);
        let summaries = t.documents.iter().filter(|d| d.project_id == project_id).map(|d| DocumentSummary {
            id: d.id,
            parent_id: d.parent_id,
            name: d.name.clone(),
            sort: d.sort,
            depth: d.depth,
            created_at: d.created_at,
            updated_at: d.updated_at,
        });
        Ok(summaries.collect())
    });
    repo
}

fn print_tree(nodes: &[DocumentNode], level: usize) {
    for node in nodes {
        println!("  {}- {} (document {})", "  ".repeat(level), node.doc.name, node.doc.id);
        print_tree(&node.children, level + 1);
    }
}

fn document(project: Id, name: &str, parent: Option<Id>, sort: i64) -> CreateDocumentRequest {
    CreateDocumentRequest { project, name: name.into(), content: Some(format!("# {name}\n")), parent, sort: Some(sort) }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = DocsService::new(Arc::new(docs_repo()), Arc::new(SystemClock), DocsConfig::default());
    let tenant = Owner::from(Party::Tenant { tenant_id: 7, partner_id: None });

    let handbook = service.create_project(None, tenant, "Employee handbook").await?;
    let minutes = service.create_project(None, tenant, "Board minutes").await?;
    println!("projects of {tenant}: {} ({}), {} ({})", handbook.name, handbook.id, minutes.name, minutes.id);

    let request = CreateTokenRequest { name: "Handbook publisher".into(), project_ids: Some(vec![handbook.id]), expires_at: None };
    let issued = service.create_token(None, tenant, request).await?;
    let shown: String = issued.secret.chars().take(10).collect();
    println!("token {:?} issued: {shown}… (shown once; only its hash is kept)", issued.token.name);

    // What the document interface does with `Authorization: Token <value>` on every request.
    let token = service.authenticate(&issued.secret).await?;
    println!("token {} authenticated; it reaches projects {:?}", token.id, token.projects.ids().unwrap_or_default());

    let intro = service.create_document(&token, document(handbook.id, "Getting started", None, 0)).await?;
    let pay = service.create_document(&token, document(handbook.id, "Pay and benefits", None, 1)).await?;
    service.create_document(&token, document(handbook.id, "Pay slips", Some(pay.id), 0)).await?;
    service.create_document(&token, document(handbook.id, "Tax year", Some(pay.id), 1)).await?;
    service.create_document(&token, document(handbook.id, "First day", Some(intro.id), 0)).await?;

    let tree = service.document_tree(&token, handbook.id).await?;
    println!("{} documents in {:?}:", tree.total, tree.project.name);
    print_tree(&tree.roots, 0);

    match service.create_document(&token, document(minutes.id, "Q1 meeting", None, 0)).await {
        Err(e) => println!("writing into {:?}: refused ({}): {e}", minutes.name, e.reason()),
        Ok(d) => println!("writing into {:?}: unexpectedly created document {}", minutes.name, d.id),
    }
    Ok(())
}

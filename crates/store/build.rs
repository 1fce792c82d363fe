//! Rebuilds this crate when a migration is added or removed: `embed_migrations!` tracks the
//! files it embeds, not the directories (a new migration would otherwise be left out of the
//! binary until something else changed here).
fn main() {
    println!("cargo:rerun-if-changed=../../migrations/sqlite");
    println!("cargo:rerun-if-changed=../../migrations/postgres");
}

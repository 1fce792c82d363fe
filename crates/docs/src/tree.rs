use crate::model::{DocumentNode, DocumentSummary};
use atrium_kernel::Id;
use std::collections::HashMap;

/// Arranges a project's documents as a tree: roots, each with its children, every level
/// ordered by sort and then id. Works bottom-up by depth, without recursion, so a deep
/// chain cannot exhaust the stack here. A document whose parent is not among `docs` is
/// shown as a root rather than lost.
///
/// ```
/// use atrium_docs::{DocumentSummary, build_tree};
///
/// let now = chrono::Utc::now();
/// let doc = |id, parent_id, sort, depth| {
///     DocumentSummary { id, parent_id, name: format!("doc {id}"), sort, depth, created_at: now, updated_at: now }
/// };
/// // Two roots (sorted by `sort`), the second with a child.
/// let tree = build_tree(vec![doc(3, Some(2), 0, 1), doc(2, None, 0, 0), doc(1, None, 5, 0)]);
/// let roots: Vec<_> = tree.iter().map(|n| n.doc.id).collect();
/// assert_eq!(roots, [2, 1]);
/// assert_eq!(tree[0].children[0].doc.id, 3);
/// ```
pub fn build_tree(mut docs: Vec<DocumentSummary>) -> Vec<DocumentNode> {
    let present: std::collections::HashSet<Id> = docs.iter().map(|d| d.id).collect();
    // Deepest first: every child is finished before its parent is built.
    docs.sort_by(|a, b| b.depth.cmp(&a.depth).then(a.id.cmp(&b.id)));
    let mut children: HashMap<Id, Vec<DocumentNode>> = HashMap::new();
    let mut roots = Vec::new();
    for doc in docs {
        let mut own = children.remove(&doc.id).unwrap_or_default();
        sort_level(&mut own);
        let parent = doc.parent_id.filter(|p| present.contains(p));
        let node = DocumentNode { doc, children: own };
        match parent {
            Some(p) => children.entry(p).or_default().push(node),
            None => roots.push(node),
        }
    }
    // Left over only if depths were inconsistent: keep those nodes visible as roots.
    roots.extend(children.into_values().flatten());
    sort_level(&mut roots);
    roots
}

fn sort_level(nodes: &mut [DocumentNode]) {
    nodes.sort_by(|a, b| a.doc.sort.cmp(&b.doc.sort).then(a.doc.id.cmp(&b.doc.id)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn doc(id: Id, parent: Option<Id>, sort: i64, depth: i32) -> DocumentSummary {
        let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().expect("valid");
        DocumentSummary { id, parent_id: parent, name: format!("d{id}"), sort, depth, created_at: at, updated_at: at }
    }

    fn shape(nodes: &[DocumentNode]) -> Vec<(Id, Vec<Id>)> {
        nodes.iter().map(|n| (n.doc.id, n.children.iter().map(|c| c.doc.id).collect())).collect()
    }

    #[test]
    fn roots_and_children_are_ordered_by_sort_then_id() {
        let docs = vec![
            doc(1, None, 5, 0),
            doc(2, None, 1, 0),
            doc(3, None, 1, 0),
            doc(4, Some(1), 2, 1),
            doc(5, Some(1), 1, 1),
            doc(6, Some(1), 2, 1),
            doc(7, Some(5), 0, 2),
        ];

        let tree = build_tree(docs);

        assert_eq!(shape(&tree), vec![(2, vec![]), (3, vec![]), (1, vec![5, 4, 6])]);
        assert_eq!(tree[2].children[0].children[0].doc.id, 7);
    }

    #[test]
    fn a_document_whose_parent_is_missing_stays_visible_as_a_root() {
        let tree = build_tree(vec![doc(1, None, 0, 0), doc(9, Some(42), 0, 1)]);
        assert_eq!(shape(&tree), vec![(1, vec![]), (9, vec![])]);
    }

    #[test]
    fn a_deep_chain_keeps_every_level() {
        let docs: Vec<_> = (1..=500).rev().map(|i| doc(i, (i > 1).then_some(i - 1), 0, (i - 1) as i32)).collect();

        let tree = build_tree(docs);

        assert_eq!(tree.len(), 1);
        let mut ids = vec![tree[0].doc.id];
        let mut node = &tree[0];
        while let Some(child) = node.children.first() {
            ids.push(child.doc.id);
            node = child;
        }
        assert_eq!(ids, (1..=500).collect::<Vec<_>>());
    }
}

use chrono::Duration;

/// Limits of the document domain. `Default` gives the documented values.
#[derive(Debug, Clone)]
pub struct DocsConfig {
    /// Longest document, project or token name, in characters.
    pub max_name_chars: usize,
    /// Largest document content, in bytes of UTF-8.
    pub max_content_bytes: usize,
    /// Deepest nesting of documents (a root is at depth 0). Bounds the tree's recursion.
    pub max_depth: i32,
    /// Most projects one token may be limited to.
    pub max_token_projects: usize,
    /// A token's last-used time is written at most this often.
    pub touch_interval: Duration,
}

impl Default for DocsConfig {
    fn default() -> Self {
        DocsConfig {
            max_name_chars: 255,
            max_content_bytes: 1024 * 1024,
            max_depth: 32,
            max_token_projects: 100,
            touch_interval: Duration::seconds(60),
        }
    }
}

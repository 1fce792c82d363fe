//! Configuration from `ATRIUM_*` environment variables and `DATABASE_URL`
//! (reference: docs/configuration.md).
use anyhow::{Context, bail};
use atrium_api::MetricsAccess;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use rand::RngCore;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Profile {
    Dev,
    Prod,
}

impl Profile {
    /// `dev` or `prod`, as `ATRIUM_PROFILE` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Dev => "dev",
            Profile::Prod => "prod",
        }
    }
}

/// Where kept code packages live (`ATRIUM_PACKAGE_STORE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PackageStoreKind {
    /// As files in `ATRIUM_PACKAGE_DIR`, which every instance running jobs must share (the
    /// default, for a single machine).
    Directory,
    /// In the database, content included: instances share packages without a shared disk.
    Database,
}

/// Which messaging platform the adapters talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Platform {
    /// The in-process sandbox mounted at `/sandbox` (dev only).
    Sandbox,
    /// The real platform at configured base URLs.
    Wechat {
        api_base: String,
        open_base: String,
        login_appid: String,
        login_secret: String,
        /// The mini-program whose subscribe messages carry pay slips (empty: slips go by SMS/e-mail).
        mp_appid: String,
        mp_secret: String,
        payslip_template_id: String,
        /// The pay platform (v3) every tenant's merchant account is reached at.
        pay_base: String,
    },
}

/// Our third-party platform's credentials (`ATRIUM_WECHAT_COMPONENT_*`). `Debug` shows the
/// appid only.
#[derive(Clone, PartialEq, Eq)]
pub struct ComponentCredentials {
    pub appid: String,
    pub secret: String,
    /// The token pushes are signed with: 3–32 letters and digits.
    pub token: String,
    /// The 43-character EncodingAESKey pushes are encrypted with.
    pub aes_key: String,
}

impl std::fmt::Debug for ComponentCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComponentCredentials").field("appid", &self.appid).finish_non_exhaustive()
    }
}

/// Everything the server needs to start. Secrets are never printed by `Debug`.
#[derive(Clone)]
pub struct Config {
    pub profile: Profile,
    pub database_url: String,
    pub bind: SocketAddr,
    /// Base URL clients and the platform reach us at; defaults to `http://<bound address>`.
    pub public_url: Option<String>,
    pub jwt_secret: Vec<u8>,
    pub master_key: [u8; 32],
    pub platform: Platform,
    pub bcrypt_cost: u32,
    pub db_pool_size: u32,
    /// How long a request waits for a database connection before answering 503.
    pub db_timeout_ms: u64,
    /// How long start-up waits for a database that is busy (SQLite locked by another process)
    /// or unreachable (PostgreSQL restarting) before it gives up.
    pub db_start_wait_secs: u64,
    pub json_limit: usize,
    pub trust_proxy: bool,
    pub workers: usize,
    pub principal_cache_ms: u64,
    pub codes_per_target_per_hour: i64,
    pub codes_per_ip_per_hour: i64,
    /// Seconds before a new code may be sent to the same target for the same purpose.
    pub code_resend_secs: u64,
    /// User creations one caller may attempt per hour.
    pub user_creates_per_hour: i64,
    /// Create `admin` with a printed random password on first start.
    pub bootstrap_admin: bool,
    /// How long a stop (SIGTERM, SIGINT) waits for in-flight requests before closing them.
    pub shutdown_timeout_secs: u64,
    /// How long a client may take to send a request's head (408 and closed past it).
    pub client_request_timeout_ms: u64,
    /// How long a client may take to send a request's body after its head (408 and closed).
    pub client_body_timeout_ms: u64,
    /// How long a closing connection may take to shut down before it is dropped.
    pub client_disconnect_timeout_ms: u64,
    /// How long an idle keep-alive connection stays open (0: no keep-alive).
    pub keep_alive_secs: u64,
    /// Who may read `/metrics`.
    pub metrics: atrium_api::MetricsAccess,
    /// Whether this instance runs background jobs (every instance may; they share the queue).
    pub jobs: bool,
    /// How long a job runner with nothing due waits before looking again.
    pub job_poll_ms: u64,
    /// Tenant steps of one release campaign at once.
    pub campaign_parallelism: usize,
    /// Between two ticks of a running release campaign.
    pub campaign_tick_ms: u64,
    /// What each tenant may spend of the platform's audit quota, speed-ups and undos, and the
    /// share the platform keeps.
    pub audit_budgets: atrium_miniprogram::AuditBudgets,
    /// How often the sweep closing expired orders runs.
    pub order_sweep_secs: i64,
    /// How long after a sub-merchant's payment it is shared (the platform refuses the first minute).
    pub sharing_delay_secs: i64,
    /// The sharing job's first wait after a run that could not finish.
    pub sharing_retry_secs: i64,
    /// Runners of the sharing job on this instance.
    pub sharing_runners: usize,
    /// How long an order can be paid when its creator sets no `expires_in`.
    pub order_default_expires_in: i64,
    /// The shortest `expires_in` a creator may set.
    pub order_min_expires_in: i64,
    /// How long an `Idempotency-Key` stays "in progress" before another request may take it
    /// over (its first request's instance died); longer than any request can take.
    pub idempotency_stale_secs: i64,
    /// How often the purge of expired authorisation attempts and old event ids runs.
    pub release_purge_secs: i64,
    /// How long the release records that only serve a short while are kept.
    pub record_retention: atrium_miniprogram::RecordRetention,
    /// Our third-party platform for mini-program releases, if configured.
    pub component: Option<ComponentCredentials>,
    /// Where the third-party platform's authorisation page lives (with `Platform::Wechat`).
    pub mp_base: String,
    /// The `miniprogram-ci` executable that uploads packages.
    pub ci_command: PathBuf,
    /// The platform's upload key (`private.<appid>.key`); without it packages cannot be
    /// uploaded (templates still can).
    pub ci_key_file: Option<PathBuf>,
    pub ci_timeout_secs: u64,
    /// Where uploaded packages are kept (shared by every instance).
    pub package_dir: PathBuf,
    /// Whether kept packages are files in `package_dir` or rows in the database.
    pub package_store: PackageStoreKind,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("profile", &self.profile)
            .field("database_url", &atrium_store::redact_url(&self.database_url))
            .field("bind", &self.bind)
            .field("public_url", &self.public_url)
            .field(
                "platform",
                &match &self.platform {
                    Platform::Sandbox => "sandbox".to_owned(),
                    Platform::Wechat { api_base, .. } => format!("wechat at {api_base}"),
                },
            )
            .field("bcrypt_cost", &self.bcrypt_cost)
            .field("metrics", &self.metrics)
            .finish_non_exhaustive()
    }
}

pub const DEFAULT_DATABASE_URL: &str = "sqlite://atrium.db";

/// The main variables, for `atrium --help`; docs/configuration.md lists every one.
pub const ENVIRONMENT_HELP: &str = "\
Environment (every variable, with its default and limits: docs/configuration.md):
  DATABASE_URL       sqlite://PATH or postgres://USER:PASS@HOST:PORT/DB [default: sqlite://atrium.db]
  ATRIUM_PROFILE     dev or prod [default: dev]
  ATRIUM_BIND        the address to listen on [default: 127.0.0.1:8080]
  ATRIUM_PUBLIC_URL  the base URL clients and the platforms reach this server at
  ATRIUM_JWT_SECRET  the access-token key, at least 32 bytes (required in prod)
  ATRIUM_MASTER_KEY  32 random bytes in base64 that encrypt secrets at rest (required in prod)
  ATRIUM_PLATFORM    sandbox or wechat [default: sandbox in dev, wechat in prod]
  ATRIUM_JOBS        whether this instance runs background jobs [default: true]
  ATRIUM_LOG         the log filter, e.g. info,atrium_store=debug [default: info]";

/// Whether reading the configuration may create what a database's first start creates: only
/// `serve` and `migrate` may ([`Config::from_env_existing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Creating {
    Allowed,
    Refused,
}

/// `path` from the root, for messages that must say which file was meant.
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// `ATRIUM_PLATFORM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum PlatformKind {
    Sandbox,
    Wechat,
}

/// Every variable the server reads (docs/configuration.md), each declared once with its
/// default and its parser. Secrets pass through here, so there is no `Debug`.
#[derive(clap::Parser)]
#[command(name = "atrium", no_binary_name = true, disable_help_flag = true, disable_version_flag = true)]
struct EnvVars {
    #[arg(long, env = "ATRIUM_PROFILE", value_enum, default_value = "dev")]
    profile: Profile,
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL)]
    database_url: String,
    #[arg(long, env = "ATRIUM_BIND", default_value = "127.0.0.1:8080")]
    bind: SocketAddr,
    #[arg(long, env = "ATRIUM_PUBLIC_URL")]
    public_url: Option<String>,
    #[arg(long, env = "ATRIUM_JWT_SECRET")]
    jwt_secret: Option<String>,
    #[arg(long, env = "ATRIUM_MASTER_KEY")]
    master_key: Option<String>,
    #[arg(long, env = "ATRIUM_SECRETS_FILE")]
    secrets_file: Option<PathBuf>,
    #[arg(long, env = "ATRIUM_PLATFORM", value_enum)]
    platform: Option<PlatformKind>,
    #[arg(long, env = "ATRIUM_WECHAT_API_BASE", default_value = "https://api.weixin.qq.com")]
    wechat_api_base: String,
    #[arg(long, env = "ATRIUM_WECHAT_OPEN_BASE", default_value = "https://open.weixin.qq.com")]
    wechat_open_base: String,
    #[arg(long, env = "ATRIUM_WECHAT_PAY_BASE", default_value = "https://api.mch.weixin.qq.com")]
    wechat_pay_base: String,
    #[arg(long, env = "ATRIUM_WECHAT_LOGIN_APPID", default_value = "")]
    wechat_login_appid: String,
    #[arg(long, env = "ATRIUM_WECHAT_LOGIN_SECRET", default_value = "")]
    wechat_login_secret: String,
    #[arg(long, env = "ATRIUM_WECHAT_MP_APPID", default_value = "")]
    wechat_mp_appid: String,
    #[arg(long, env = "ATRIUM_WECHAT_MP_SECRET", default_value = "")]
    wechat_mp_secret: String,
    #[arg(long, env = "ATRIUM_WECHAT_PAYSLIP_TEMPLATE_ID", default_value = "")]
    wechat_payslip_template_id: String,
    #[arg(long, env = "ATRIUM_WECHAT_MP_BASE", default_value = "https://mp.weixin.qq.com")]
    wechat_mp_base: String,
    #[arg(long, env = "ATRIUM_WECHAT_COMPONENT_APPID")]
    wechat_component_appid: Option<String>,
    #[arg(long, env = "ATRIUM_WECHAT_COMPONENT_SECRET")]
    wechat_component_secret: Option<String>,
    #[arg(long, env = "ATRIUM_WECHAT_COMPONENT_TOKEN")]
    wechat_component_token: Option<String>,
    #[arg(long, env = "ATRIUM_WECHAT_COMPONENT_AES_KEY")]
    wechat_component_aes_key: Option<String>,
    #[arg(long, env = "ATRIUM_WECHAT_CI_COMMAND", default_value = "miniprogram-ci")]
    wechat_ci_command: PathBuf,
    #[arg(long, env = "ATRIUM_WECHAT_CI_KEY_FILE")]
    wechat_ci_key_file: Option<PathBuf>,
    /// Below the job lease (`jobs::LEASE_SECS`, 10 minutes), so no second runner claims an
    /// upload still running.
    #[arg(long, env = "ATRIUM_WECHAT_CI_TIMEOUT_SECS", default_value_t = 480, value_parser = number::<u64>(Some(10), Some(540)))]
    wechat_ci_timeout_secs: u64,
    #[arg(long, env = "ATRIUM_PACKAGE_DIR")]
    package_dir: Option<PathBuf>,
    #[arg(long, env = "ATRIUM_PACKAGE_STORE", value_enum, default_value = "directory")]
    package_store: PackageStoreKind,
    #[arg(long, env = "ATRIUM_BCRYPT_COST", default_value_t = 10, value_parser = number::<u32>(Some(4), Some(31)))]
    bcrypt_cost: u32,
    #[arg(long, env = "ATRIUM_DB_POOL_SIZE", default_value_t = 16, value_parser = number::<u32>(Some(1), None))]
    db_pool_size: u32,
    #[arg(long, env = "ATRIUM_DB_TIMEOUT_MS", default_value_t = 1000)]
    db_timeout_ms: u64,
    #[arg(long, env = "ATRIUM_DB_START_WAIT_SECS", default_value_t = 60, value_parser = number::<u64>(Some(0), Some(3600)))]
    db_start_wait_secs: u64,
    #[arg(long, env = "ATRIUM_JSON_LIMIT", default_value_t = 1024 * 1024)]
    json_limit: usize,
    #[arg(long, env = "ATRIUM_TRUST_PROXY", default_value = "false", value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::Set)]
    trust_proxy: bool,
    /// Default: the number of CPUs.
    #[arg(long, env = "ATRIUM_WORKERS", value_parser = number::<u16>(Some(1), None))]
    workers: Option<u16>,
    /// At most a second, so a revocation reaches every instance within one.
    #[arg(long, env = "ATRIUM_PRINCIPAL_CACHE_MS", default_value_t = 500, value_parser = number::<u64>(Some(0), Some(1000)))]
    principal_cache_ms: u64,
    #[arg(long, env = "ATRIUM_CODES_PER_TARGET_PER_HOUR", default_value_t = 5)]
    codes_per_target_per_hour: u32,
    #[arg(long, env = "ATRIUM_CODES_PER_IP_PER_HOUR", default_value_t = 30)]
    codes_per_ip_per_hour: u32,
    #[arg(long, env = "ATRIUM_CODE_RESEND_SECS", default_value_t = 60)]
    code_resend_secs: u64,
    #[arg(long, env = "ATRIUM_USER_CREATES_PER_HOUR", default_value_t = atrium_identity::USER_CREATES_PER_HOUR as u32)]
    user_creates_per_hour: u32,
    #[arg(long, env = "ATRIUM_BOOTSTRAP_ADMIN", default_value = "true", value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::Set)]
    bootstrap_admin: bool,
    #[arg(long, env = "ATRIUM_SHUTDOWN_TIMEOUT_SECS", default_value_t = 30)]
    shutdown_timeout_secs: u64,
    #[arg(long, env = "ATRIUM_CLIENT_REQUEST_TIMEOUT_MS", default_value_t = 5000, value_parser = number::<u64>(Some(100), None))]
    client_request_timeout_ms: u64,
    #[arg(long, env = "ATRIUM_CLIENT_BODY_TIMEOUT_MS", default_value_t = 30_000, value_parser = number::<u64>(Some(100), None))]
    client_body_timeout_ms: u64,
    #[arg(long, env = "ATRIUM_CLIENT_DISCONNECT_TIMEOUT_MS", default_value_t = 1000)]
    client_disconnect_timeout_ms: u64,
    #[arg(long, env = "ATRIUM_KEEP_ALIVE_SECS", default_value_t = 5)]
    keep_alive_secs: u64,
    /// `on` or `off` (also true/false, yes/no, 1/0); see [`MetricsAccess`].
    #[arg(long, env = "ATRIUM_METRICS", value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::Set)]
    metrics: Option<bool>,
    #[arg(long, env = "ATRIUM_METRICS_TOKEN")]
    metrics_token: Option<String>,
    #[arg(long, env = "ATRIUM_JOBS", default_value = "true", value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::Set)]
    jobs: bool,
    #[arg(long, env = "ATRIUM_JOB_POLL_MS", default_value_t = 1000, value_parser = number::<u64>(Some(10), Some(60_000)))]
    job_poll_ms: u64,
    #[arg(long, env = "ATRIUM_CAMPAIGN_PARALLELISM", default_value_t = 8, value_parser = number::<usize>(Some(1), Some(256)))]
    campaign_parallelism: usize,
    #[arg(long, env = "ATRIUM_CAMPAIGN_TICK_MS", default_value_t = 2000, value_parser = number::<u64>(Some(10), Some(600_000)))]
    campaign_tick_ms: u64,
    #[arg(long, env = "ATRIUM_MINIPROGRAM_SUBMIT_BUDGET", default_value = "3/1h,10/30d", value_parser = budget)]
    miniprogram_submit_budget: Budget,
    #[arg(long, env = "ATRIUM_MINIPROGRAM_SPEEDUP_BUDGET", default_value = "1/1h,3/30d", value_parser = budget)]
    miniprogram_speedup_budget: Budget,
    #[arg(long, env = "ATRIUM_MINIPROGRAM_UNDO_BUDGET", default_value = "2/1h,5/30d", value_parser = budget)]
    miniprogram_undo_budget: Budget,
    #[arg(long, env = "ATRIUM_MINIPROGRAM_QUOTA_RESERVE", default_value_t = 20, value_parser = number::<u8>(Some(0), Some(100)))]
    miniprogram_quota_reserve: u8,
    #[arg(long, env = "ATRIUM_ORDER_SWEEP_SECS", default_value_t = 60, value_parser = number::<i64>(Some(1), Some(3600)))]
    order_sweep_secs: i64,
    #[arg(long, env = "ATRIUM_SHARING_DELAY_SECS", default_value_t = 120, value_parser = number::<i64>(Some(0), Some(86_400)))]
    sharing_delay_secs: i64,
    #[arg(long, env = "ATRIUM_SHARING_RETRY_SECS", default_value_t = 60, value_parser = number::<i64>(Some(1), Some(3600)))]
    sharing_retry_secs: i64,
    #[arg(long, env = "ATRIUM_SHARING_RUNNERS", default_value_t = 8, value_parser = number::<usize>(Some(1), Some(16)))]
    sharing_runners: usize,
    #[arg(long, env = "ATRIUM_ORDER_DEFAULT_EXPIRES_IN", default_value_t = 1800, value_parser = number::<i64>(Some(1), Some(604_800)))]
    order_default_expires_in: i64,
    #[arg(long, env = "ATRIUM_ORDER_MIN_EXPIRES_IN", default_value_t = 60, value_parser = number::<i64>(Some(1), Some(604_800)))]
    order_min_expires_in: i64,
    #[arg(long, env = "ATRIUM_IDEMPOTENCY_STALE_SECS", default_value_t = 60, value_parser = number::<i64>(Some(5), Some(86_400)))]
    idempotency_stale_secs: i64,
    #[arg(long, env = "ATRIUM_RELEASE_PURGE_SECS", default_value_t = 3600, value_parser = number::<i64>(Some(1), Some(86_400)))]
    release_purge_secs: i64,
    #[arg(long, env = "ATRIUM_AUTHORIZATION_ATTEMPT_RETENTION_DAYS", default_value_t = 1, value_parser = number::<i64>(Some(0), Some(365)))]
    authorization_attempt_retention_days: i64,
    #[arg(long, env = "ATRIUM_EVENT_ID_RETENTION_DAYS", default_value_t = 7, value_parser = number::<i64>(Some(1), Some(365)))]
    event_id_retention_days: i64,
}

impl EnvVars {
    /// The variables `var` has, parsed by clap as if given as `--name=value` (clap's own
    /// environment reading is turned off, so only `var` is consulted).
    fn read(var: &impl Fn(&str) -> Option<String>) -> anyhow::Result<EnvVars> {
        use clap::{CommandFactory, FromArgMatches};
        let command = EnvVars::command();
        let mut argv = vec![];
        let mut names = vec![];
        for arg in command.get_arguments() {
            let (Some(long), Some(env)) = (arg.get_long(), arg.get_env().and_then(|e| e.to_str())) else { continue };
            names.push((format!("--{long} <"), env.to_owned()));
            if let Some(value) = var(env) {
                argv.push(format!("--{long}={value}"));
            }
        }
        let matches = command
            .mut_args(|a| a.env(clap::builder::Resettable::Reset))
            .try_get_matches_from(argv)
            .and_then(|m| EnvVars::from_arg_matches(&m))
            .map_err(|e| anyhow::anyhow!(in_variable_terms(&in_words(&e), &names)))?;
        Ok(matches)
    }
}

/// Why a number was refused, as the bounds in words: `a whole number between 4 and 31`.
#[derive(Debug)]
pub(crate) struct OutOfRange(String);

/// A tenant budget as configured (`3/1h,10/30d`, or `off`).
#[derive(Debug, Clone)]
pub(crate) struct Budget(Vec<atrium_miniprogram::Window>);

fn budget(raw: &str) -> Result<Budget, OutOfRange> {
    atrium_miniprogram::budget::parse_windows(raw)
        .map(Budget)
        .map_err(|e| OutOfRange(format!("N/PERIOD limits separated by commas (such as 3/1h,10/30d) or off: {e}")))
}

impl std::fmt::Display for OutOfRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "must be {}", self.0)
    }
}

impl std::error::Error for OutOfRange {}

/// A parser of a whole number within `min` and `max` (either end open when `None`) whose
/// refusal says the bounds in words, never as a Rust range (`3 is not in 4..=31`).
pub(crate) fn number<T>(min: Option<T>, max: Option<T>) -> impl Fn(&str) -> Result<T, OutOfRange> + Clone + Send + Sync + 'static
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy + Send + Sync + 'static,
{
    move |raw| match raw.parse::<T>() {
        Ok(n) if min.is_none_or(|lo| n >= lo) && max.is_none_or(|hi| n <= hi) => Ok(n),
        _ => Err(OutOfRange(match (min, max) {
            (Some(lo), Some(hi)) => format!("a whole number between {lo} and {hi}"),
            (Some(lo), None) => format!("a whole number of at least {lo}"),
            (None, Some(hi)) => format!("a whole number of at most {hi}"),
            (None, None) => "a whole number".to_owned(),
        })),
    }
}

/// A clap error in words: a number out of its bounds is `--bcrypt-cost <BCRYPT_COST> must be
/// a whole number between 4 and 31, not 3` (the flag then named as its variable); any other
/// error as clap says it.
fn in_words(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let bounds = std::error::Error::source(e).and_then(|s| s.downcast_ref::<OutOfRange>());
    let context = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    match (bounds, context(ContextKind::InvalidArg), context(ContextKind::InvalidValue)) {
        (Some(bounds), Some(arg), Some(value)) => format!("{arg} {bounds}, not {value}"),
        _ => e.to_string(),
    }
}

/// A clap error about `--bcrypt-cost <BCRYPT_COST>` said about `ATRIUM_BCRYPT_COST`, on one line.
fn in_variable_terms(message: &str, names: &[(String, String)]) -> String {
    let mut line = message.lines().next().unwrap_or(message).trim_start_matches("error: ").to_owned();
    for (flag, env) in names {
        while let Some(at) = line.find(flag.as_str()) {
            let end = line[at..].find('>').map_or(line.len(), |i| at + i + 1);
            line.replace_range(at..end, env);
        }
    }
    line
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> anyhow::Result<Config> {
        Config::from_vars(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// As [`from_env`](Self::from_env) for the commands that work on an existing database
    /// (every one but `serve` and `migrate`): a SQLite file that is not there, or the dev
    /// profile's secrets file of a database never served, is an error naming what is missing
    /// — never created, so a command run in the wrong directory cannot quietly act on an
    /// empty database of its own.
    pub fn from_env_existing() -> anyhow::Result<Config> {
        Config::from_vars_with(|k| std::env::var(k).ok().filter(|v| !v.is_empty()), Creating::Refused)
    }

    /// Reads configuration through `var` (so tests can pass a map): every variable is
    /// declared once in `EnvVars`, with its default and parser, and clap reads the values
    /// `var` gives. A bad value is an error naming the variable.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> anyhow::Result<Config> {
        Config::from_vars_with(var, Creating::Allowed)
    }

    /// As [`from_vars`](Self::from_vars); `creating` says whether what a database's first
    /// start makes (the SQLite file, the dev secrets) may be made now.
    pub fn from_vars_with(var: impl Fn(&str) -> Option<String>, creating: Creating) -> anyhow::Result<Config> {
        let env = EnvVars::read(&var)?;
        let profile = env.profile;
        let database_url = env.database_url;
        if creating == Creating::Refused
            && let Some(path) = atrium_store::sqlite_path(&database_url)
            && !path.exists()
        {
            bail!(
                "no database at {} (DATABASE_URL={database_url}): only `atrium serve` and `atrium migrate` create one; \
                 set DATABASE_URL to the server's database",
                absolute(&path).display()
            );
        }
        let platform = match env.platform {
            None if profile == Profile::Dev => Platform::Sandbox,
            Some(PlatformKind::Sandbox) => Platform::Sandbox,
            None | Some(PlatformKind::Wechat) => Platform::Wechat {
                api_base: env.wechat_api_base,
                open_base: env.wechat_open_base,
                login_appid: env.wechat_login_appid,
                login_secret: env.wechat_login_secret,
                mp_appid: env.wechat_mp_appid,
                mp_secret: env.wechat_mp_secret,
                payslip_template_id: env.wechat_payslip_template_id,
                pay_base: env.wechat_pay_base.trim_end_matches('/').to_owned(),
            },
        };
        let component = component_credentials(
            env.wechat_component_appid,
            env.wechat_component_secret,
            env.wechat_component_token,
            env.wechat_component_aes_key,
        )?;
        if let Some(key) = &env.wechat_ci_key_file {
            if atrium_wechat::MiniprogramCiConfig::new(&env.wechat_ci_command, key, ".").is_none() {
                bail!("ATRIUM_WECHAT_CI_KEY_FILE must be named private.<appid>.key, as the platform names upload keys");
            }
            if !key.is_file() {
                bail!("ATRIUM_WECHAT_CI_KEY_FILE: {} is not a readable file", key.display());
            }
        }
        let package_dir = env.package_dir.clone().unwrap_or_else(|| default_package_dir(&database_url, &var));

        let (jwt_secret, master_key) = match profile {
            Profile::Prod => {
                let jwt = env.jwt_secret.context("ATRIUM_JWT_SECRET is required in the prod profile")?;
                let master = env.master_key.context("ATRIUM_MASTER_KEY is required in the prod profile")?;
                (parse_jwt_secret(&jwt)?, parse_master_key(&master)?)
            }
            Profile::Dev => {
                let file = env.secrets_file.unwrap_or_else(|| default_secrets_file(&database_url, &var));
                let stored = match (env.jwt_secret, env.master_key) {
                    (Some(j), Some(m)) => DevSecrets { jwt_secret: j, master_key: m },
                    (j, m) => {
                        let mut s = DevSecrets::load_or_create(&file, creating)?;
                        if let Some(j) = j {
                            s.jwt_secret = j;
                        }
                        if let Some(m) = m {
                            s.master_key = m;
                        }
                        s
                    }
                };
                (parse_jwt_secret(&stored.jwt_secret)?, parse_master_key(&stored.master_key)?)
            }
        };

        let metrics = match (env.metrics, env.metrics_token) {
            (Some(false), _) => MetricsAccess::Off,
            (Some(true) | None, Some(token)) => {
                if token.len() < 16 {
                    bail!("ATRIUM_METRICS_TOKEN must be at least 16 characters");
                }
                MetricsAccess::Token(token)
            }
            (None, None) if profile == Profile::Prod => MetricsAccess::Off,
            (Some(true) | None, None) => {
                if profile == Profile::Prod {
                    bail!("the prod profile serves /metrics only with ATRIUM_METRICS_TOKEN: set it, or ATRIUM_METRICS=off");
                }
                MetricsAccess::Open
            }
        };
        let config = Config {
            profile,
            database_url,
            bind: env.bind,
            public_url: env.public_url.map(|u| u.trim_end_matches('/').to_owned()),
            jwt_secret,
            master_key,
            platform,
            bcrypt_cost: env.bcrypt_cost,
            db_pool_size: env.db_pool_size,
            db_timeout_ms: env.db_timeout_ms,
            db_start_wait_secs: env.db_start_wait_secs,
            json_limit: env.json_limit,
            trust_proxy: env.trust_proxy,
            workers: env.workers.map_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2), usize::from),
            principal_cache_ms: env.principal_cache_ms,
            codes_per_target_per_hour: i64::from(env.codes_per_target_per_hour),
            codes_per_ip_per_hour: i64::from(env.codes_per_ip_per_hour),
            code_resend_secs: env.code_resend_secs,
            user_creates_per_hour: i64::from(env.user_creates_per_hour),
            bootstrap_admin: env.bootstrap_admin,
            shutdown_timeout_secs: env.shutdown_timeout_secs,
            client_request_timeout_ms: env.client_request_timeout_ms,
            client_body_timeout_ms: env.client_body_timeout_ms,
            client_disconnect_timeout_ms: env.client_disconnect_timeout_ms,
            keep_alive_secs: env.keep_alive_secs,
            metrics,
            jobs: env.jobs,
            job_poll_ms: env.job_poll_ms,
            campaign_parallelism: env.campaign_parallelism,
            campaign_tick_ms: env.campaign_tick_ms,
            audit_budgets: atrium_miniprogram::AuditBudgets {
                submit: env.miniprogram_submit_budget.0,
                speedup: env.miniprogram_speedup_budget.0,
                undo: env.miniprogram_undo_budget.0,
                reserve_percent: env.miniprogram_quota_reserve,
            },
            order_sweep_secs: env.order_sweep_secs,
            sharing_delay_secs: env.sharing_delay_secs,
            sharing_retry_secs: env.sharing_retry_secs,
            sharing_runners: env.sharing_runners,
            order_default_expires_in: env.order_default_expires_in,
            order_min_expires_in: env.order_min_expires_in,
            idempotency_stale_secs: env.idempotency_stale_secs,
            release_purge_secs: env.release_purge_secs,
            record_retention: atrium_miniprogram::RecordRetention {
                attempts_after_expiry: chrono::Duration::days(env.authorization_attempt_retention_days),
                event_ids: chrono::Duration::days(env.event_id_retention_days),
            },
            component,
            mp_base: env.wechat_mp_base.trim_end_matches('/').to_owned(),
            ci_command: env.wechat_ci_command,
            ci_key_file: env.wechat_ci_key_file,
            ci_timeout_secs: env.wechat_ci_timeout_secs,
            package_dir,
            package_store: env.package_store,
        };
        config.validate()?;
        Ok(config)
    }

    /// The rules of the prod profile, and sanity for both.
    pub fn validate(&self) -> anyhow::Result<()> {
        if !(4..=31).contains(&self.bcrypt_cost) {
            bail!("ATRIUM_BCRYPT_COST must be between 4 and 31");
        }
        if self.client_request_timeout_ms < 100 || self.client_body_timeout_ms < 100 {
            bail!("ATRIUM_CLIENT_REQUEST_TIMEOUT_MS and ATRIUM_CLIENT_BODY_TIMEOUT_MS must be at least 100");
        }
        if self.order_default_expires_in < self.order_min_expires_in {
            bail!("ATRIUM_ORDER_DEFAULT_EXPIRES_IN must be at least ATRIUM_ORDER_MIN_EXPIRES_IN");
        }
        if self.principal_cache_ms > 1000 {
            bail!("ATRIUM_PRINCIPAL_CACHE_MS must be at most 1000 so revocations reach every instance within a second");
        }
        if self.profile == Profile::Prod {
            if self.platform == Platform::Sandbox {
                bail!("the prod profile refuses the sandbox platform: set ATRIUM_PLATFORM=wechat and its credentials");
            }
            if self.bcrypt_cost < 10 {
                bail!("the prod profile needs ATRIUM_BCRYPT_COST of at least 10");
            }
            if weak_secret(&self.jwt_secret) {
                bail!("ATRIUM_JWT_SECRET is too weak: use at least 32 random bytes");
            }
            if weak_secret(&self.master_key) {
                bail!("ATRIUM_MASTER_KEY is too weak: use 32 random bytes, base64-encoded (e.g. `openssl rand -base64 32`)");
            }
            if let Platform::Wechat { login_appid, login_secret, .. } = &self.platform
                && login_appid.is_empty() != login_secret.is_empty()
            {
                bail!("set both ATRIUM_WECHAT_LOGIN_APPID and ATRIUM_WECHAT_LOGIN_SECRET, or neither");
            }
            if let Platform::Wechat { mp_appid, mp_secret, payslip_template_id, .. } = &self.platform
                && !(mp_appid.is_empty() == mp_secret.is_empty() && mp_appid.is_empty() == payslip_template_id.is_empty())
            {
                bail!("set all of ATRIUM_WECHAT_MP_APPID, ATRIUM_WECHAT_MP_SECRET and ATRIUM_WECHAT_PAYSLIP_TEMPLATE_ID, or none");
            }
        }
        Ok(())
    }
}

fn parse_jwt_secret(raw: &str) -> anyhow::Result<Vec<u8>> {
    let bytes = raw.as_bytes().to_vec();
    if bytes.len() < 32 {
        bail!("ATRIUM_JWT_SECRET must be at least 32 bytes");
    }
    Ok(bytes)
}

/// A secret is weak when it is short or has too few distinct bytes to be random.
fn weak_secret(s: &[u8]) -> bool {
    let distinct = s.iter().collect::<std::collections::BTreeSet<_>>().len();
    s.len() < 32 || distinct < 10
}

/// What a master key must look like, for every message about a malformed one.
const MASTER_KEY_FORM: &str =
    "32 random bytes in standard base64 (44 characters of A-Z a-z 0-9 + / ending in =, e.g. from `openssl rand -base64 32`)";

fn parse_master_key(raw: &str) -> anyhow::Result<[u8; 32]> {
    let bytes = B64.decode(raw.trim()).map_err(|e| {
        let what = match e {
            base64::DecodeError::InvalidByte(offset, byte) => {
                format!("character {:?} at position {} is not standard base64", char::from(byte), offset + 1)
            }
            base64::DecodeError::InvalidLength(_) => "its length is not that of base64".to_owned(),
            base64::DecodeError::InvalidLastSymbol(offset, _) => format!("the last character (position {}) is wrong", offset + 1),
            base64::DecodeError::InvalidPadding => "its = padding is wrong".to_owned(),
        };
        anyhow::anyhow!("ATRIUM_MASTER_KEY must be {MASTER_KEY_FORM}: {what}")
    })?;
    let len = bytes.len();
    bytes.try_into().map_err(|_| anyhow::anyhow!("ATRIUM_MASTER_KEY must be {MASTER_KEY_FORM}; it decodes to {len} bytes"))
}

/// Where the dev profile keeps its generated secrets unless `ATRIUM_SECRETS_FILE` says: beside
/// the SQLite file (`atrium.db` → `atrium.secrets.json`); for PostgreSQL, in the user's data
/// directory (`$XDG_DATA_HOME/atrium`, else `~/.local/share/atrium`, else the working
/// directory), one file per server and database, so the secrets follow the database whatever
/// the working directory.
fn default_secrets_file(database_url: &str, var: &impl Fn(&str) -> Option<String>) -> PathBuf {
    let path = database_url.strip_prefix("sqlite://").or_else(|| database_url.strip_prefix("sqlite:"));
    match path {
        Some(p) if p != ":memory:" => {
            let p = Path::new(p);
            let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("atrium");
            p.with_file_name(format!("{stem}.secrets.json"))
        }
        Some(_) => PathBuf::from("atrium.secrets.json"),
        None => {
            let dir = var("XDG_DATA_HOME")
                .map(PathBuf::from)
                .or_else(|| var("HOME").map(|h| Path::new(&h).join(".local/share")))
                .map(|d| d.join("atrium"))
                .unwrap_or_default();
            dir.join(format!("{}.secrets.json", database_key(database_url)))
        }
    }
}

/// Where packages are kept unless `ATRIUM_PACKAGE_DIR` says: beside the dev secrets' default
/// place (`atrium.db` → `atrium.packages`).
fn default_package_dir(database_url: &str, var: &impl Fn(&str) -> Option<String>) -> PathBuf {
    let secrets = default_secrets_file(database_url, var);
    let name = secrets.file_name().and_then(|n| n.to_str()).unwrap_or("atrium.secrets.json");
    secrets.with_file_name(name.replace(".secrets.json", ".packages"))
}

/// `ATRIUM_WECHAT_COMPONENT_*`: all four or none, each in the platform's form.
fn component_credentials(
    appid: Option<String>,
    secret: Option<String>,
    token: Option<String>,
    aes_key: Option<String>,
) -> anyhow::Result<Option<ComponentCredentials>> {
    let (appid, secret, token, aes_key) = match (appid, secret, token, aes_key) {
        (None, None, None, None) => return Ok(None),
        (Some(a), Some(s), Some(t), Some(k)) => (a, s, t, k),
        _ => bail!(
            "set all of ATRIUM_WECHAT_COMPONENT_APPID, ATRIUM_WECHAT_COMPONENT_SECRET, ATRIUM_WECHAT_COMPONENT_TOKEN and ATRIUM_WECHAT_COMPONENT_AES_KEY, or none"
        ),
    };
    if !(1..=32).contains(&appid.len()) || !appid.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        bail!("ATRIUM_WECHAT_COMPONENT_APPID must be 1 to 32 letters, digits or _ (the platform's appid, e.g. wx…)");
    }
    if !(3..=32).contains(&token.len()) || !token.bytes().all(|b| b.is_ascii_alphanumeric()) {
        bail!("ATRIUM_WECHAT_COMPONENT_TOKEN must be 3 to 32 letters and digits, as registered with the platform");
    }
    // 43 base64 characters are 32 bytes and two spare bits, which the platform ignores.
    let key_ok = aes_key.len() == 43 && aes_key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/');
    if !key_ok {
        bail!("ATRIUM_WECHAT_COMPONENT_AES_KEY must be the platform's 43-character EncodingAESKey (letters, digits, + and /)");
    }
    Ok(Some(ComponentCredentials { appid, secret, token, aes_key }))
}

/// `host_port_database` of a PostgreSQL URL, in file-name-safe characters (no credentials).
fn database_key(url: &str) -> String {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let rest = rest.rsplit_once('@').map(|(_, r)| r).unwrap_or(rest);
    let rest = rest.split('?').next().unwrap_or(rest);
    let (host, db) = rest.split_once('/').unwrap_or((rest, ""));
    let key = format!("{}_{}", host.replace(':', "_"), if db.is_empty() { "postgres" } else { db });
    key.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect()
}

#[derive(serde::Serialize, serde::Deserialize)]
struct DevSecrets {
    jwt_secret: String,
    master_key: String,
}

impl DevSecrets {
    /// The dev profile's secrets: generated once and kept, so restarts keep sessions and
    /// encrypted data readable.
    fn load_or_create(file: &Path, creating: Creating) -> anyhow::Result<DevSecrets> {
        if file.exists() {
            let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
            return serde_json::from_str(&text).with_context(|| format!("{} is not a secrets file", file.display()));
        }
        if creating == Creating::Refused {
            bail!(
                "no dev secrets at {}: the database was never served with them; run `atrium serve` or `atrium migrate` \
                 first, or set ATRIUM_SECRETS_FILE (or ATRIUM_JWT_SECRET and ATRIUM_MASTER_KEY) as the server has them",
                absolute(file).display()
            );
        }
        let mut jwt = [0u8; 48];
        let mut master = [0u8; 32];
        rand::rng().fill_bytes(&mut jwt);
        rand::rng().fill_bytes(&mut master);
        let secrets =
            DevSecrets { jwt_secret: base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(jwt), master_key: B64.encode(master) };
        if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        write_private(file, &serde_json::to_string_pretty(&secrets)?)?;
        log::info!("generated dev secrets in {}", file.display());
        Ok(secrets)
    }
}

fn write_private(file: &Path, contents: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(file).with_context(|| format!("cannot create {}", file.display()))?;
    f.write_all(contents.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    const KEY: &str = "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=";

    #[test]
    fn prod_refuses_a_missing_jwt_secret() {
        let err = Config::from_vars(vars(&[("ATRIUM_PROFILE", "prod"), ("ATRIUM_MASTER_KEY", KEY)])).err().unwrap();
        assert!(err.to_string().contains("ATRIUM_JWT_SECRET"));
    }

    #[test]
    fn prod_refuses_a_weak_jwt_secret() {
        let err =
            Config::from_vars(vars(&[("ATRIUM_PROFILE", "prod"), ("ATRIUM_JWT_SECRET", &"a".repeat(40)), ("ATRIUM_MASTER_KEY", KEY)]))
                .err()
                .unwrap();
        assert!(err.to_string().contains("too weak"), "{err}");
    }

    const AES_KEY: &str = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG";

    /// `pairs` with both secrets given, so the dev profile writes no secrets file.
    fn with_secrets<'a>(pairs: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut v = vec![("ATRIUM_JWT_SECRET", "4f9a1c7e2b8d6035a9e1f4c72d8b0e6a3c5f7d9b"), ("ATRIUM_MASTER_KEY", KEY)];
        v.extend_from_slice(pairs);
        v
    }

    #[test]
    fn component_credentials_come_all_four_or_none_in_the_platforms_form() {
        let all = [
            ("ATRIUM_WECHAT_COMPONENT_APPID", "wx_component_1"),
            ("ATRIUM_WECHAT_COMPONENT_SECRET", "s3cret"),
            ("ATRIUM_WECHAT_COMPONENT_TOKEN", "Token123"),
            ("ATRIUM_WECHAT_COMPONENT_AES_KEY", AES_KEY),
        ];
        let config = Config::from_vars(vars(&with_secrets(&all))).unwrap();
        let c = config.component.clone().unwrap();
        assert_eq!((c.appid.as_str(), c.token.as_str(), c.aes_key.as_str()), ("wx_component_1", "Token123", AES_KEY));
        assert!(!format!("{c:?}").contains("s3cret") && !format!("{c:?}").contains(AES_KEY));
        assert!(Config::from_vars(vars(&with_secrets(&[]))).unwrap().component.is_none());

        let err = Config::from_vars(vars(&with_secrets(&all[..3]))).err().unwrap().to_string();
        assert!(err.contains("or none"), "{err}");
        for (name, bad) in [
            ("ATRIUM_WECHAT_COMPONENT_AES_KEY", "tooshort"),
            ("ATRIUM_WECHAT_COMPONENT_AES_KEY", "abcdefghijklmnopqrstuvwxyz0123456789ABCDEF="),
            ("ATRIUM_WECHAT_COMPONENT_TOKEN", "to"),
            ("ATRIUM_WECHAT_COMPONENT_TOKEN", "has space"),
            ("ATRIUM_WECHAT_COMPONENT_APPID", "wx-dash"),
        ] {
            let mut v = all.to_vec();
            v.retain(|(k, _)| *k != name);
            v.push((name, bad));
            let err = Config::from_vars(vars(&with_secrets(&v))).err().unwrap_or_else(|| panic!("{name}={bad} accepted")).to_string();
            assert!(err.contains(name), "{name}={bad}: {err}");
        }
    }

    #[test]
    fn the_upload_key_must_be_an_existing_file_named_as_the_platform_names_it() {
        let dir = std::env::temp_dir().join(format!("atrium-ci-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("private.wx_tpl_dev.key");
        std::fs::write(&good, "key").unwrap();
        let config = Config::from_vars(vars(&with_secrets(&[("ATRIUM_WECHAT_CI_KEY_FILE", good.to_str().unwrap())]))).unwrap();
        assert_eq!(config.ci_key_file.as_deref(), Some(good.as_path()));
        let misnamed = dir.join("upload.key");
        std::fs::write(&misnamed, "key").unwrap();
        let err =
            Config::from_vars(vars(&with_secrets(&[("ATRIUM_WECHAT_CI_KEY_FILE", misnamed.to_str().unwrap())]))).err().unwrap().to_string();
        assert!(err.contains("private.<appid>.key"), "{err}");
        let missing = dir.join("private.wx_gone.key");
        let err =
            Config::from_vars(vars(&with_secrets(&[("ATRIUM_WECHAT_CI_KEY_FILE", missing.to_str().unwrap())]))).err().unwrap().to_string();
        assert!(err.contains("not a readable file"), "{err}");
        let err = Config::from_vars(vars(&with_secrets(&[("ATRIUM_WECHAT_CI_TIMEOUT_SECS", "600")]))).err().unwrap().to_string();
        assert!(err.contains("ATRIUM_WECHAT_CI_TIMEOUT_SECS"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn packages_are_kept_beside_the_sqlite_database_by_default() {
        let config = Config::from_vars(vars(&with_secrets(&[("DATABASE_URL", "sqlite:///var/lib/atrium/main.db")]))).unwrap();
        assert_eq!(config.package_dir, PathBuf::from("/var/lib/atrium/main.packages"));
    }

    #[test]
    fn packages_are_kept_in_the_directory_unless_the_database_is_chosen() {
        assert_eq!(Config::from_vars(vars(&with_secrets(&[]))).unwrap().package_store, PackageStoreKind::Directory);
        for (value, kind) in [("directory", PackageStoreKind::Directory), ("database", PackageStoreKind::Database)] {
            let config = Config::from_vars(vars(&with_secrets(&[("ATRIUM_PACKAGE_STORE", value)]))).unwrap();
            assert_eq!(config.package_store, kind, "{value}");
        }
        let err = Config::from_vars(vars(&with_secrets(&[("ATRIUM_PACKAGE_STORE", "disk")]))).err().unwrap().to_string();
        assert!(err.contains("ATRIUM_PACKAGE_STORE") && err.contains("disk"), "{err}");
    }

    #[test]
    fn prod_refuses_the_sandbox() {
        let err = Config::from_vars(vars(&[
            ("ATRIUM_PROFILE", "prod"),
            ("ATRIUM_JWT_SECRET", "4f9a1c7e2b8d6035a9e1f4c72d8b0e6a3c5f7d9b"),
            ("ATRIUM_MASTER_KEY", KEY),
            ("ATRIUM_PLATFORM", "sandbox"),
        ]))
        .err()
        .unwrap();
        assert!(err.to_string().contains("sandbox"), "{err}");
    }

    #[test]
    fn prod_accepts_strong_secrets_and_the_real_platform() {
        let c = Config::from_vars(vars(&[
            ("ATRIUM_PROFILE", "prod"),
            ("ATRIUM_JWT_SECRET", "4f9a1c7e2b8d6035a9e1f4c72d8b0e6a3c5f7d9b"),
            ("ATRIUM_MASTER_KEY", KEY),
        ]))
        .unwrap();
        assert!(matches!(c.platform, Platform::Wechat { .. }));
        assert_eq!(c.bind.to_string(), "127.0.0.1:8080");
    }

    #[test]
    fn dev_generates_secrets_once_and_keeps_them() {
        let dir = std::env::temp_dir().join(format!("atrium-cfg-{}", rand::rng().next_u64()));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}/a.db", dir.display());
        let first = Config::from_vars(vars(&[("DATABASE_URL", &url)])).unwrap();
        let second = Config::from_vars(vars(&[("DATABASE_URL", &url)])).unwrap();
        assert_eq!(first.jwt_secret, second.jwt_secret);
        assert_eq!(first.master_key, second.master_key);
        assert!(dir.join("a.secrets.json").exists());
        assert_eq!(first.platform, Platform::Sandbox);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn prod_refuses_a_master_key_of_two_repeated_bytes_as_it_refuses_such_a_jwt_secret() {
        let two_values = B64.encode([0xab, 0xcd].repeat(16));
        let err = Config::from_vars(vars(&[
            ("ATRIUM_PROFILE", "prod"),
            ("ATRIUM_JWT_SECRET", "4f9a1c7e2b8d6035a9e1f4c72d8b0e6a3c5f7d9b"),
            ("ATRIUM_MASTER_KEY", &two_values),
        ]))
        .err()
        .unwrap();
        assert!(err.to_string().contains("ATRIUM_MASTER_KEY is too weak"), "{err}");
        let err =
            Config::from_vars(vars(&[("ATRIUM_PROFILE", "prod"), ("ATRIUM_JWT_SECRET", &"ab".repeat(20)), ("ATRIUM_MASTER_KEY", KEY)]))
                .err()
                .unwrap();
        assert!(err.to_string().contains("ATRIUM_JWT_SECRET is too weak"), "{err}");
    }

    #[test]
    fn a_malformed_master_key_is_named_with_the_form_expected() {
        let err =
            Config::from_vars(vars(&[("ATRIUM_JWT_SECRET", "4f9a1c7e2b8d6035a9e1f4c72d8b0e6a3c5f7d9b"), ("ATRIUM_MASTER_KEY", "ab_cd")]))
                .err()
                .unwrap();
        let shown = format!("{err:#}");
        assert!(shown.contains("ATRIUM_MASTER_KEY must be 32 random bytes in standard base64"), "{shown}");
        assert!(shown.contains("'_' at position 3"), "{shown}");
        let short = B64.encode([1u8, 2, 3]);
        let err =
            Config::from_vars(vars(&[("ATRIUM_JWT_SECRET", "4f9a1c7e2b8d6035a9e1f4c72d8b0e6a3c5f7d9b"), ("ATRIUM_MASTER_KEY", &short)]))
                .err()
                .unwrap();
        assert!(format!("{err:#}").contains("it decodes to 3 bytes"), "{err:#}");
    }

    #[test]
    fn dev_on_postgres_keeps_secrets_in_the_data_directory_per_database() {
        let dir = std::env::temp_dir().join(format!("atrium-cfg-{}", rand::rng().next_u64()));
        let data = dir.display().to_string();
        let url = "postgres://atrium:pw@db.internal:5433/payroll?sslmode=require";
        let c = Config::from_vars(vars(&[("DATABASE_URL", url), ("XDG_DATA_HOME", &data)])).unwrap();
        let file = dir.join("atrium").join("db.internal_5433_payroll.secrets.json");
        assert!(file.exists(), "no {}", file.display());
        let again = Config::from_vars(vars(&[("DATABASE_URL", url), ("XDG_DATA_HOME", &data)])).unwrap();
        assert_eq!(c.master_key, again.master_key);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn metrics_are_open_in_dev_and_off_in_prod_unless_a_token_is_set() {
        let prod =
            [("ATRIUM_PROFILE", "prod"), ("ATRIUM_JWT_SECRET", "4f9a1c7e2b8d6035a9e1f4c72d8b0e6a3c5f7d9b"), ("ATRIUM_MASTER_KEY", KEY)];
        assert_eq!(Config::from_vars(vars(&prod)).unwrap().metrics, MetricsAccess::Off);
        let with_token = [&prod[..], &[("ATRIUM_METRICS_TOKEN", "scrape-token-0123456789")]].concat();
        assert_eq!(Config::from_vars(vars(&with_token)).unwrap().metrics, MetricsAccess::Token("scrape-token-0123456789".into()));
        let open_in_prod = [&prod[..], &[("ATRIUM_METRICS", "on")]].concat();
        assert!(Config::from_vars(vars(&open_in_prod)).err().unwrap().to_string().contains("ATRIUM_METRICS_TOKEN"));
        let dev = [("ATRIUM_JWT_SECRET", "4f9a1c7e2b8d6035a9e1f4c72d8b0e6a3c5f7d9b"), ("ATRIUM_MASTER_KEY", KEY)];
        assert_eq!(Config::from_vars(vars(&dev)).unwrap().metrics, MetricsAccess::Open);
        let dev_off = [&dev[..], &[("ATRIUM_METRICS", "off")]].concat();
        assert_eq!(Config::from_vars(vars(&dev_off)).unwrap().metrics, MetricsAccess::Off);
    }

    const JWT: &str = "4f9a1c7e2b8d6035a9e1f4c72d8b0e6a3c5f7d9b";

    #[test]
    fn a_bad_value_is_an_error_naming_its_variable_and_the_value() {
        for (name, value) in [
            ("ATRIUM_BIND", "nowhere"),
            ("ATRIUM_BCRYPT_COST", "3"),
            ("ATRIUM_WORKERS", "0"),
            ("ATRIUM_PRINCIPAL_CACHE_MS", "5000"),
            ("ATRIUM_CLIENT_BODY_TIMEOUT_MS", "50"),
            ("ATRIUM_TRUST_PROXY", "perhaps"),
            ("ATRIUM_PROFILE", "staging"),
            ("ATRIUM_PLATFORM", "carrier-pigeon"),
            ("ATRIUM_DB_POOL_SIZE", "many"),
            ("ATRIUM_METRICS", "sometimes"),
            ("ATRIUM_PACKAGE_STORE", "s3"),
        ] {
            let err = Config::from_vars(vars(&[("ATRIUM_JWT_SECRET", JWT), ("ATRIUM_MASTER_KEY", KEY), (name, value)])).err();
            let shown = err.map(|e| e.to_string()).unwrap_or_else(|| panic!("{name}={value} was accepted"));
            assert!(shown.contains(name) && shown.contains(value), "{name}={value}: {shown}");
            assert!(!shown.contains("--") && !shown.contains('\n'), "{name}={value} speaks of flags: {shown}");
        }
    }

    #[test]
    fn a_number_out_of_its_bounds_is_refused_in_words() {
        for (name, value, words) in [
            ("ATRIUM_BCRYPT_COST", "3", "ATRIUM_BCRYPT_COST must be a whole number between 4 and 31, not 3"),
            ("ATRIUM_BCRYPT_COST", "ten", "ATRIUM_BCRYPT_COST must be a whole number between 4 and 31, not ten"),
            ("ATRIUM_WORKERS", "0", "ATRIUM_WORKERS must be a whole number of at least 1, not 0"),
            ("ATRIUM_WECHAT_CI_TIMEOUT_SECS", "600", "between 10 and 540"),
            ("ATRIUM_DB_POOL_SIZE", "0", "of at least 1"),
            ("ATRIUM_DB_START_WAIT_SECS", "3601", "between 0 and 3600"),
            ("ATRIUM_PRINCIPAL_CACHE_MS", "5000", "between 0 and 1000"),
            ("ATRIUM_CLIENT_REQUEST_TIMEOUT_MS", "50", "of at least 100"),
            ("ATRIUM_CLIENT_BODY_TIMEOUT_MS", "50", "of at least 100"),
            ("ATRIUM_JOB_POLL_MS", "5", "between 10 and 60000"),
            ("ATRIUM_CAMPAIGN_PARALLELISM", "0", "between 1 and 256"),
            ("ATRIUM_CAMPAIGN_TICK_MS", "5", "between 10 and 600000"),
            ("ATRIUM_ORDER_SWEEP_SECS", "0", "between 1 and 3600"),
            ("ATRIUM_ORDER_DEFAULT_EXPIRES_IN", "0", "between 1 and 604800"),
            ("ATRIUM_ORDER_MIN_EXPIRES_IN", "604801", "between 1 and 604800"),
            ("ATRIUM_IDEMPOTENCY_STALE_SECS", "4", "between 5 and 86400"),
            ("ATRIUM_RELEASE_PURGE_SECS", "0", "between 1 and 86400"),
            ("ATRIUM_AUTHORIZATION_ATTEMPT_RETENTION_DAYS", "-1", "between 0 and 365"),
            ("ATRIUM_AUTHORIZATION_ATTEMPT_RETENTION_DAYS", "366", "between 0 and 365"),
            ("ATRIUM_EVENT_ID_RETENTION_DAYS", "0", "between 1 and 365"),
            ("ATRIUM_EVENT_ID_RETENTION_DAYS", "a week", "between 1 and 365"),
        ] {
            let err = Config::from_vars(vars(&[("ATRIUM_JWT_SECRET", JWT), ("ATRIUM_MASTER_KEY", KEY), (name, value)])).err();
            let shown = err.map(|e| e.to_string()).unwrap_or_else(|| panic!("{name}={value} was accepted"));
            assert!(shown.starts_with(&format!("{name} must be a whole number")), "{name}={value}: {shown}");
            assert!(shown.contains(words) && shown.ends_with(&format!(", not {value}")), "{name}={value}: {shown}");
            assert!(!shown.contains("..") && !shown.contains("is not in"), "{name}={value} speaks Rust: {shown}");
        }
    }

    #[test]
    fn release_records_are_purged_hourly_and_kept_a_day_and_a_week_unless_set() {
        let base = [("ATRIUM_JWT_SECRET", JWT), ("ATRIUM_MASTER_KEY", KEY)];
        let c = Config::from_vars(vars(&base)).unwrap();
        assert_eq!(c.release_purge_secs, 3600);
        assert_eq!(c.record_retention, atrium_miniprogram::RecordRetention::default());
        assert_eq!(
            (c.record_retention.attempts_after_expiry, c.record_retention.event_ids),
            (chrono::Duration::days(1), chrono::Duration::days(7))
        );

        let set = [
            ("ATRIUM_RELEASE_PURGE_SECS", "60"),
            ("ATRIUM_AUTHORIZATION_ATTEMPT_RETENTION_DAYS", "0"),
            ("ATRIUM_EVENT_ID_RETENTION_DAYS", "30"),
        ];
        let c = Config::from_vars(vars(&[&base[..], &set[..]].concat())).unwrap();
        assert_eq!(c.release_purge_secs, 60);
        assert_eq!(
            c.record_retention,
            atrium_miniprogram::RecordRetention { attempts_after_expiry: chrono::Duration::zero(), event_ids: chrono::Duration::days(30) }
        );
    }

    #[test]
    fn the_help_names_only_variables_that_are_read() {
        use clap::CommandFactory;
        let declared: Vec<String> = EnvVars::command()
            .get_arguments()
            .filter_map(|a| a.get_env().and_then(|e| e.to_str()).map(str::to_owned))
            .chain(["ATRIUM_LOG".to_owned()])
            .collect();
        let named: Vec<&str> = ENVIRONMENT_HELP.lines().skip(1).filter_map(|l| l.split_whitespace().next()).collect();
        assert!(named.contains(&"DATABASE_URL") && named.len() >= 8, "{named:?}");
        for name in named {
            assert!(declared.iter().any(|d| d == name), "the help names {name}, which is not read");
        }
    }

    #[test]
    fn switches_take_the_usual_spellings_and_numbers_their_defaults() {
        let base = [("ATRIUM_JWT_SECRET", JWT), ("ATRIUM_MASTER_KEY", KEY)];
        let c = Config::from_vars(vars(&base)).unwrap();
        assert_eq!((c.trust_proxy, c.bootstrap_admin, c.bcrypt_cost, c.db_pool_size), (false, true, 10, 16));
        assert_eq!((c.principal_cache_ms, c.client_request_timeout_ms, c.keep_alive_secs), (500, 5000, 5));
        let c = Config::from_vars(vars(
            &[
                &base[..],
                &[("ATRIUM_TRUST_PROXY", "yes"), ("ATRIUM_BOOTSTRAP_ADMIN", "0"), ("ATRIUM_METRICS", "off"), ("ATRIUM_WORKERS", "3")],
            ]
            .concat(),
        ))
        .unwrap();
        assert_eq!((c.trust_proxy, c.bootstrap_admin, &c.metrics, c.workers), (true, false, &MetricsAccess::Off, 3));
    }

    #[test]
    fn debug_output_hides_secrets() {
        let c = Config::from_vars(vars(&[("ATRIUM_JWT_SECRET", "super-secret-value-that-is-long-enough!"), ("ATRIUM_MASTER_KEY", KEY)]))
            .unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("super-secret"));
    }
}

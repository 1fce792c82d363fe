//! Configuration from `ATRIUM_*` environment variables and `DATABASE_URL`
//! (reference: docs/configuration.md).
use anyhow::{Context, bail};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use rand::RngCore;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Dev,
    Prod,
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
    },
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
            .finish_non_exhaustive()
    }
}

pub const DEFAULT_DATABASE_URL: &str = "sqlite://atrium.db";

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> anyhow::Result<Config> {
        Config::from_vars(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// Reads configuration through `var` (so tests can pass a map).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> anyhow::Result<Config> {
        let profile = match var("ATRIUM_PROFILE").as_deref() {
            None | Some("dev") => Profile::Dev,
            Some("prod") => Profile::Prod,
            Some(other) => bail!("ATRIUM_PROFILE must be dev or prod, not {other:?}"),
        };
        let database_url = var("DATABASE_URL").unwrap_or_else(|| DEFAULT_DATABASE_URL.into());
        let bind: SocketAddr =
            var("ATRIUM_BIND").unwrap_or_else(|| "127.0.0.1:8080".into()).parse().context("ATRIUM_BIND must be HOST:PORT")?;
        let parse_num = |name: &str, default: u64| -> anyhow::Result<u64> {
            var(name).map(|v| v.parse::<u64>().with_context(|| format!("{name} must be a whole number"))).unwrap_or(Ok(default))
        };
        let platform = match var("ATRIUM_PLATFORM").as_deref() {
            None if profile == Profile::Dev => Platform::Sandbox,
            Some("sandbox") => Platform::Sandbox,
            None | Some("wechat") => Platform::Wechat {
                api_base: var("ATRIUM_WECHAT_API_BASE").unwrap_or_else(|| "https://api.weixin.qq.com".into()),
                open_base: var("ATRIUM_WECHAT_OPEN_BASE").unwrap_or_else(|| "https://open.weixin.qq.com".into()),
                login_appid: var("ATRIUM_WECHAT_LOGIN_APPID").unwrap_or_default(),
                login_secret: var("ATRIUM_WECHAT_LOGIN_SECRET").unwrap_or_default(),
                mp_appid: var("ATRIUM_WECHAT_MP_APPID").unwrap_or_default(),
                mp_secret: var("ATRIUM_WECHAT_MP_SECRET").unwrap_or_default(),
                payslip_template_id: var("ATRIUM_WECHAT_PAYSLIP_TEMPLATE_ID").unwrap_or_default(),
            },
            Some(other) => bail!("ATRIUM_PLATFORM must be sandbox or wechat, not {other:?}"),
        };

        let (jwt_secret, master_key) = match profile {
            Profile::Prod => {
                let jwt = var("ATRIUM_JWT_SECRET").context("ATRIUM_JWT_SECRET is required in the prod profile")?;
                let master = var("ATRIUM_MASTER_KEY").context("ATRIUM_MASTER_KEY is required in the prod profile")?;
                (parse_jwt_secret(&jwt)?, parse_master_key(&master)?)
            }
            Profile::Dev => {
                let file = var("ATRIUM_SECRETS_FILE").map(PathBuf::from).unwrap_or_else(|| default_secrets_file(&database_url));
                let stored = match (var("ATRIUM_JWT_SECRET"), var("ATRIUM_MASTER_KEY")) {
                    (Some(j), Some(m)) => DevSecrets { jwt_secret: j, master_key: m },
                    (j, m) => {
                        let mut s = DevSecrets::load_or_create(&file)?;
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

        let bcrypt_cost = parse_num("ATRIUM_BCRYPT_COST", 10)? as u32;
        let config = Config {
            profile,
            database_url,
            bind,
            public_url: var("ATRIUM_PUBLIC_URL").map(|u| u.trim_end_matches('/').to_owned()),
            jwt_secret,
            master_key,
            platform,
            bcrypt_cost,
            db_pool_size: parse_num("ATRIUM_DB_POOL_SIZE", 16)? as u32,
            db_timeout_ms: parse_num("ATRIUM_DB_TIMEOUT_MS", 1000)?,
            json_limit: parse_num("ATRIUM_JSON_LIMIT", 1024 * 1024)? as usize,
            trust_proxy: matches!(var("ATRIUM_TRUST_PROXY").as_deref(), Some("1" | "true" | "yes")),
            workers: parse_num("ATRIUM_WORKERS", std::thread::available_parallelism().map(|n| n.get() as u64).unwrap_or(2))? as usize,
            principal_cache_ms: parse_num("ATRIUM_PRINCIPAL_CACHE_MS", 500)?,
            codes_per_target_per_hour: parse_num("ATRIUM_CODES_PER_TARGET_PER_HOUR", 5)? as i64,
            codes_per_ip_per_hour: parse_num("ATRIUM_CODES_PER_IP_PER_HOUR", 30)? as i64,
            code_resend_secs: parse_num("ATRIUM_CODE_RESEND_SECS", 60)?,
            user_creates_per_hour: parse_num("ATRIUM_USER_CREATES_PER_HOUR", atrium_identity::USER_CREATES_PER_HOUR as u64)? as i64,
            bootstrap_admin: !matches!(var("ATRIUM_BOOTSTRAP_ADMIN").as_deref(), Some("0" | "false" | "no")),
        };
        config.validate()?;
        Ok(config)
    }

    /// The rules of the prod profile, and sanity for both.
    pub fn validate(&self) -> anyhow::Result<()> {
        if !(4..=31).contains(&self.bcrypt_cost) {
            bail!("ATRIUM_BCRYPT_COST must be between 4 and 31");
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
            if self.master_key.iter().all(|b| *b == self.master_key[0]) {
                bail!("ATRIUM_MASTER_KEY is too weak: use 32 random bytes, base64-encoded");
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

fn parse_master_key(raw: &str) -> anyhow::Result<[u8; 32]> {
    let bytes = B64.decode(raw.trim()).context("ATRIUM_MASTER_KEY must be base64")?;
    bytes.try_into().map_err(|_| anyhow::anyhow!("ATRIUM_MASTER_KEY must decode to exactly 32 bytes"))
}

/// Beside the SQLite file (`atrium.db` → `atrium.secrets.json`), else the working directory.
fn default_secrets_file(database_url: &str) -> PathBuf {
    let path = database_url.strip_prefix("sqlite://").or_else(|| database_url.strip_prefix("sqlite:"));
    match path {
        Some(p) if p != ":memory:" => {
            let p = Path::new(p);
            let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("atrium");
            p.with_file_name(format!("{stem}.secrets.json"))
        }
        _ => PathBuf::from("atrium.secrets.json"),
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct DevSecrets {
    jwt_secret: String,
    master_key: String,
}

impl DevSecrets {
    /// The dev profile's secrets: generated once and kept, so restarts keep sessions and
    /// encrypted data readable.
    fn load_or_create(file: &Path) -> anyhow::Result<DevSecrets> {
        if file.exists() {
            let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
            return serde_json::from_str(&text).with_context(|| format!("{} is not a secrets file", file.display()));
        }
        let mut jwt = [0u8; 48];
        let mut master = [0u8; 32];
        rand::rng().fill_bytes(&mut jwt);
        rand::rng().fill_bytes(&mut master);
        let secrets =
            DevSecrets { jwt_secret: base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(jwt), master_key: B64.encode(master) };
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
    fn debug_output_hides_secrets() {
        let c = Config::from_vars(vars(&[("ATRIUM_JWT_SECRET", "super-secret-value-that-is-long-enough!"), ("ATRIUM_MASTER_KEY", KEY)]))
            .unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("super-secret"));
    }
}

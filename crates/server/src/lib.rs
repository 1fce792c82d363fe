//! The composition root: reads configuration, opens the database, builds every adapter and
//! domain service, and serves both interfaces. The `atrium` binary and the end-to-end tests
//! start the server through [`start`].

pub mod adapters;
pub mod config;
pub mod docs_cli;
pub mod jobs;
pub mod order_ledger;

use actix_web::http::KeepAlive;
use actix_web::{HttpServer, web};
use anyhow::Context;
use atrium_api::{AppState, Metrics};
use atrium_docs::{DocsConfig, DocsService};
use atrium_identity::{ChatLoginProvider, CodeSender, IdentityConfig, IdentityService, RoleService, UserService};
use atrium_kernel::{Clock, IdempotencyStore, JobStore, SystemClock};
use atrium_miniprogram::{AuthorizationService, CodeUploader, MiniProgramPlatform, PipelinePorts, PipelineService, ReleaseSettings};
use atrium_orders::{OrderService, OrderSettings};
use atrium_org::{AccessChanged, AuditService, EmployeeService, PartnerService, TenantService};
use atrium_payments::{PaymentService, PaymentSettings};
use atrium_payroll::{FilePorts, PayrollService, PayslipChannels, PayslipNotifier, TextSender};
use atrium_sandbox::{
    ComponentConfig, SANDBOX_LOGIN_APPID, SANDBOX_LOGIN_SECRET, SANDBOX_MP_APPID, SANDBOX_MP_SECRET, SANDBOX_PAYSLIP_TEMPLATE_ID, Sandbox,
    SandboxUploader,
};
use atrium_store::{
    Db, DbIdempotencyStore, DbJobStore, DocsStore, FieldCipher, IdentityStore, OrdersStore, OrgStore, PackageDir, PaymentStore,
    PayrollStore, ReleaseStore,
};
use atrium_wechat::{AccessTokens, CallRecorder, MiniProgramState, SubscribeMessages, WechatAppConfig, WechatPayslips};
use atrium_wechat::{BlockingPackageInspector, MiniprogramCi, MiniprogramCiConfig, WechatOpen, WechatOpenConfig};
use atrium_wechat::{OpensslMerchantKeys, WechatLogin, WechatLoginConfig, WechatPay, WechatPayConfig};
use jobs::Jobs;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

pub use config::{Config, Creating, Platform, Profile};

/// A running server.
pub struct Running {
    pub addr: SocketAddr,
    pub handle: actix_web::dev::ServerHandle,
    pub server: tokio::task::JoinHandle<std::io::Result<()>>,
    /// The one-time password of the `admin` user created on this start, if any.
    pub bootstrap_password: Option<String>,
    pub identity: Arc<IdentityService>,
    pub docs: Arc<DocsService>,
    pub db: Db,
    pub sandbox: Option<Sandbox>,
    pub metrics: Arc<Metrics>,
    pub jobs: Arc<Jobs>,
    /// How long a graceful stop waits for in-flight requests and jobs.
    pub shutdown_timeout: Duration,
}

impl Running {
    /// Stops serving: background jobs claim no new work, the listener closes, and — when
    /// `graceful` — in-flight requests finish (for at most the shutdown timeout) before
    /// connections close. Resolves once the server has stopped.
    pub async fn stop(&self, graceful: bool) {
        self.jobs.stop_claiming();
        self.handle.stop(graceful).await;
        if graceful && !self.jobs.wait(self.shutdown_timeout).await {
            log::warn!("background jobs still running after {:?}; stopping anyway", self.shutdown_timeout);
        }
    }
}

/// Password hashing for this configuration: half the cores at most, so logins never starve
/// request handling.
pub fn password_hasher(config: &Config) -> Arc<adapters::BcryptHasher> {
    Arc::new(adapters::BcryptHasher::new(config.bcrypt_cost, config.workers / 2))
}

/// Opens the database and applies pending migrations.
pub fn open_database(config: &Config) -> anyhow::Result<Db> {
    let db = Db::connect_with(&config.database_url, config.db_pool_size, std::time::Duration::from_millis(config.db_timeout_ms.max(1)))?;
    let ran = db.migrate()?;
    if ran > 0 {
        log::info!("applied {ran} migration(s)");
    }
    Ok(db)
}

/// The database of a command that works on an existing one (every command but `serve` and
/// `migrate`): says on standard error which database it opened, and refuses one that no
/// `serve` or `migrate` ever set up instead of creating it. Pending migrations are applied,
/// as `serve` would.
pub fn open_existing_database(config: &Config) -> anyhow::Result<Db> {
    if let Some(path) = atrium_store::sqlite_path(&config.database_url) {
        // Checked before connecting: opening a SQLite file creates it.
        anyhow::ensure!(
            path.exists(),
            "no database at {}: only `atrium serve` and `atrium migrate` create one; set DATABASE_URL to the server's database",
            config::absolute(&path).display()
        );
    }
    let shown = database_name(&config.database_url);
    let db = Db::connect_with(&config.database_url, config.db_pool_size, std::time::Duration::from_millis(config.db_timeout_ms.max(1)))?;
    anyhow::ensure!(
        db.is_initialised()?,
        "the {shown} has no Atrium tables: run `atrium migrate` (or `atrium serve`) on it first, or set DATABASE_URL to the server's database"
    );
    eprintln!("using the {shown}");
    let ran = db.migrate()?;
    if ran > 0 {
        log::info!("applied {ran} migration(s)");
    }
    Ok(db)
}

/// The database `url` names, for people: `SQLite database /srv/atrium/atrium.db`, or
/// `database postgres://atrium:***@db:5432/atrium` (never the password).
pub fn database_name(url: &str) -> String {
    match atrium_store::sqlite_path(url) {
        Some(path) => format!("SQLite database {}", config::absolute(&path).display()),
        None => format!("database {}", atrium_store::redact_url(url)),
    }
}

/// Runs a start-up step that needs the database, waiting out a database that cannot serve
/// yet — SQLite's file locked by another process (a seed, a backup), PostgreSQL restarting or
/// not yet reachable — for at most `wait`, with a log line at each try. Any other error, or
/// one that lasts past `wait`, stops the start.
async fn at_start<T, F, Fut>(what: &str, wait: Duration, mut step: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    let deadline = std::time::Instant::now() + wait;
    let mut pause = Duration::from_millis(250);
    loop {
        match step().await {
            Ok(value) => return Ok(value),
            Err(e) if cannot_serve_yet(&e) && std::time::Instant::now() + pause < deadline => {
                log::warn!("{what}: the database cannot serve yet ({e:#}); trying again in {pause:?}");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
            Err(e) if cannot_serve_yet(&e) => {
                return Err(e.context(format!("{what}: the database could not serve within ATRIUM_DB_START_WAIT_SECS ({wait:?})")));
            }
            Err(e) => return Err(e.context(what.to_owned())),
        }
    }
}

/// Whether a start-up error says the database is busy or unreachable for now, rather than
/// misconfigured or broken.
fn cannot_serve_yet(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        if let Some(atrium_kernel::Error::Unavailable { .. }) = cause.downcast_ref::<atrium_kernel::Error>() {
            return true;
        }
        let text = cause.to_string();
        atrium_store::cannot_serve_now(&text)
            || ["Connection refused", "could not connect to server", "connection to server at", "timed out"]
                .iter()
                .any(|t| text.contains(t))
    })
}

/// The identity service over `db`, with the platform and delivery adapters of `config`.
pub fn identity_service(
    config: &Config,
    db: &Db,
    hasher: Arc<adapters::BcryptHasher>,
    public_url: &str,
    sandbox: Option<&Sandbox>,
    calls: Option<Arc<dyn CallRecorder>>,
) -> anyhow::Result<Arc<IdentityService>> {
    let recorded = |login: WechatLogin| match &calls {
        Some(c) => login.with_recorder(c.clone()),
        None => login,
    };
    let (chat, codes): (Option<Arc<dyn ChatLoginProvider>>, Arc<dyn CodeSender>) = match (&config.platform, sandbox) {
        (Platform::Sandbox, Some(sb)) => {
            let login = WechatLogin::new(WechatLoginConfig {
                api_base: format!("{public_url}/sandbox/api"),
                open_base: format!("{public_url}/sandbox/open"),
                appid: SANDBOX_LOGIN_APPID.into(),
                secret: SANDBOX_LOGIN_SECRET.into(),
            })?;
            (Some(Arc::new(recorded(login))), Arc::new(sb.outbox()))
        }
        (Platform::Wechat { api_base, open_base, login_appid, login_secret, .. }, _) if !login_appid.is_empty() => {
            let login = WechatLogin::new(WechatLoginConfig {
                api_base: api_base.clone(),
                open_base: open_base.clone(),
                appid: login_appid.clone(),
                secret: login_secret.clone(),
            })?;
            (Some(Arc::new(recorded(login))), Arc::new(adapters::LogCodeSender { show_codes: config.profile == Profile::Dev }))
        }
        _ => (None, Arc::new(adapters::LogCodeSender { show_codes: config.profile == Profile::Dev })),
    };
    let identity_config = IdentityConfig {
        jwt_secret: config.jwt_secret.clone(),
        expose_debug_codes: config.profile == Profile::Dev,
        qr_callback_url: format!("{public_url}/api/v1/auth/chat-qr/callback"),
        principal_cache_ttl: std::time::Duration::from_millis(config.principal_cache_ms),
        codes_per_target_per_hour: config.codes_per_target_per_hour,
        codes_per_ip_per_hour: config.codes_per_ip_per_hour,
        code_resend_after: chrono::Duration::seconds(config.code_resend_secs.min(3600) as i64),
        ..IdentityConfig::default()
    };
    Ok(Arc::new(IdentityService::new(
        Arc::new(IdentityStore::new(db.clone())),
        hasher,
        codes,
        chat,
        Arc::new(SystemClock),
        identity_config,
    )))
}

/// Pay-slip delivery: the platform's subscribe messages for employees with an openid, else SMS
/// or e-mail (the sandbox's outbox in dev; no provider is wired for prod yet, so such slips
/// are marked failed with that reason).
pub fn payslip_notifier(
    config: &Config,
    public_url: &str,
    sandbox: Option<&Sandbox>,
    calls: Option<Arc<dyn CallRecorder>>,
) -> anyhow::Result<Arc<dyn PayslipNotifier>> {
    let subscribe = |api_base: String, appid: &str, secret: &str, template_id: &str| -> anyhow::Result<WechatPayslips> {
        let tokens = AccessTokens::new(WechatAppConfig { api_base, appid: appid.into(), secret: secret.into() })?;
        let tokens = Arc::new(match &calls {
            Some(c) => tokens.with_recorder(c.clone()),
            None => tokens,
        });
        Ok(WechatPayslips {
            messages: Arc::new(SubscribeMessages::new(tokens)),
            template_id: template_id.into(),
            page: Some("pages/payslip/index".into()),
            miniprogram_state: MiniProgramState::Formal,
        })
    };
    type Transports = (Option<Arc<dyn PayslipNotifier>>, Option<Arc<dyn TextSender>>);
    let (platform, text): Transports = match (&config.platform, sandbox) {
        (Platform::Sandbox, Some(sb)) => (
            Some(Arc::new(subscribe(
                format!("{public_url}/sandbox/api"),
                SANDBOX_MP_APPID,
                SANDBOX_MP_SECRET,
                SANDBOX_PAYSLIP_TEMPLATE_ID,
            )?)),
            Some(Arc::new(adapters::OutboxTexts(sb.outbox()))),
        ),
        (Platform::Wechat { api_base, mp_appid, mp_secret, payslip_template_id, .. }, _) if !mp_appid.is_empty() => {
            (Some(Arc::new(subscribe(api_base.clone(), mp_appid, mp_secret, payslip_template_id)?)), None)
        }
        _ => (None, None),
    };
    Ok(Arc::new(PayslipChannels::new(platform, text)))
}

/// Payments: tenants' merchant accounts on the pay platform (the sandbox's in dev), reached
/// by our own client, and their transactions, refunds and notifications in `db`.
pub fn payment_service(
    config: &Config,
    db: &Db,
    public_url: &str,
    calls: Option<Arc<dyn CallRecorder>>,
    jobs: Arc<dyn JobStore>,
) -> anyhow::Result<Arc<PaymentService>> {
    let base = match &config.platform {
        Platform::Sandbox => format!("{public_url}/sandbox/pay"),
        Platform::Wechat { pay_base, .. } => pay_base.clone(),
    };
    let pay = WechatPay::new(WechatPayConfig::new(base))?;
    let pay = match calls {
        Some(c) => pay.with_recorder(c),
        None => pay,
    };
    let service = PaymentService::new(
        Arc::new(PaymentStore::new(db.clone(), FieldCipher::new(&config.master_key))),
        Arc::new(pay),
        Arc::new(OpensslMerchantKeys),
        jobs,
        Arc::new(SystemClock),
        PaymentSettings {
            sharing_delay: chrono::Duration::seconds(config.sharing_delay_secs),
            sharing_retry: chrono::Duration::seconds(config.sharing_retry_secs),
            ..PaymentSettings::new(public_url)
        },
    );
    Ok(Arc::new(service))
}

/// Mini-program code releases through our third-party platform: the sandbox's in dev (with
/// the configured credentials, or generated ones), the real one when
/// `ATRIUM_WECHAT_COMPONENT_*` is set, otherwise none (every call says so). Packages are kept
/// in the package directory and uploaded by `miniprogram-ci` (the sandbox's upload endpoint
/// in dev). The pipeline acts through the authorisation service it holds
/// ([`PipelineService::authorization`]).
pub fn release_pipeline(
    config: &Config,
    db: &Db,
    public_url: &str,
    sandbox: Option<&Sandbox>,
    calls: Option<Arc<dyn CallRecorder>>,
    jobs: Arc<dyn JobStore>,
) -> anyhow::Result<Arc<PipelineService>> {
    let open = |c: WechatOpenConfig| -> anyhow::Result<Arc<dyn MiniProgramPlatform>> {
        let open = WechatOpen::new(c)?;
        Ok(Arc::new(match &calls {
            Some(r) => open.with_recorder(r.clone()),
            None => open,
        }))
    };
    let (platform, uploader): (Arc<dyn MiniProgramPlatform>, Arc<dyn CodeUploader>) = match (&config.platform, sandbox) {
        (Platform::Sandbox, Some(sb)) => {
            if let Some(c) = &config.component {
                sb.set_component(ComponentConfig {
                    component_appid: c.appid.clone(),
                    component_secret: c.secret.clone(),
                    token: c.token.clone(),
                    encoding_aes_key: c.aes_key.clone(),
                    ..sb.component()
                })
                .map_err(|e| anyhow::anyhow!("the sandbox refuses the component credentials: {e}"))?;
            }
            sb.push_events_to(public_url).map_err(|e| anyhow::anyhow!("the sandbox cannot push to {public_url}: {e}"))?;
            let c = sb.component();
            let api = format!("{public_url}/sandbox/api");
            let platform = open(WechatOpenConfig::new(
                api.clone(),
                format!("{public_url}/sandbox/mp"),
                c.component_appid,
                c.component_secret,
                c.token,
                c.encoding_aes_key,
            ))?;
            let uploader = SandboxUploader::new(api, c.template_dev_appid).with_timeout(Duration::from_secs(config.ci_timeout_secs));
            (platform, Arc::new(uploader))
        }
        (Platform::Wechat { api_base, .. }, _) => {
            let platform = match &config.component {
                Some(c) => open(WechatOpenConfig::new(
                    api_base.clone(),
                    config.mp_base.clone(),
                    c.appid.clone(),
                    c.secret.clone(),
                    c.token.clone(),
                    c.aes_key.clone(),
                ))?,
                None => Arc::new(adapters::UnconfiguredPlatform),
            };
            let uploader: Arc<dyn CodeUploader> = match &config.ci_key_file {
                Some(key) => {
                    let mut ci = MiniprogramCiConfig::new(&config.ci_command, key, config.package_dir.join("ci-work"))
                        .context("ATRIUM_WECHAT_CI_KEY_FILE must be named private.<appid>.key")?;
                    ci.timeout = Duration::from_secs(config.ci_timeout_secs);
                    Arc::new(MiniprogramCi::new(ci))
                }
                None => Arc::new(adapters::UnconfiguredUploader),
            };
            (platform, uploader)
        }
        (Platform::Sandbox, None) => anyhow::bail!("the sandbox platform needs the sandbox"),
    };
    let store = Arc::new(ReleaseStore::new(db.clone(), FieldCipher::new(&config.master_key)));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let settings = ReleaseSettings { budgets: config.audit_budgets.clone(), ..ReleaseSettings::new(public_url) };
    let authorization = Arc::new(AuthorizationService::new(store.clone(), platform.clone(), clock.clone(), settings.clone()));
    let ports = PipelinePorts {
        tasks: store,
        packages: match config.package_store {
            crate::config::PackageStoreKind::Directory => Arc::new(PackageDir::new(db.clone(), config.package_dir.clone())),
            crate::config::PackageStoreKind::Database => {
                Arc::new(atrium_store::PackageDb::new(db.clone(), config.package_dir.join("opened")))
            }
        },
        platform,
        inspector: Arc::new(BlockingPackageInspector),
        uploader,
        jobs,
    };
    Ok(Arc::new(PipelineService::new(authorization, ports, clock, settings)))
}

/// The document service over `db` (also used by the `docs` CLI commands).
pub fn docs_service(db: &Db) -> Arc<DocsService> {
    Arc::new(DocsService::new(Arc::new(DocsStore::new(db.clone())), Arc::new(SystemClock), DocsConfig::default()))
}

/// Once the server answers, the sandbox plays the third-party platform's part: a verify
/// ticket now and every 10 minutes, and authorisation links for `control/authorize
/// {tenant_id}` as a platform admin would get them.
fn sandbox_platform_running(sb: &Sandbox, authorizations: Arc<AuthorizationService>) {
    sb.resolve_tenant_links(Arc::new(move |tenant_id| {
        let authorizations = authorizations.clone();
        Box::pin(async move {
            // The sandbox's stand-in for a platform administrator (no user of ours).
            let actor = atrium_kernel::Actor::new(
                0,
                "sandbox",
                atrium_kernel::Party::Platform,
                [atrium_kernel::permission::MINIPROGRAM_PUBLISH.name],
            );
            match authorizations.authorization(&actor, Some(tenant_id)).await {
                Ok(view) => view.authorize_url,
                Err(e) => {
                    log::warn!("sandbox: no authorisation link for tenant {tenant_id}: {e}");
                    None
                }
            }
        })
    }));
    sb.spawn_verify_ticket_pushes(Duration::from_secs(600));
}

/// Removes package uploads an instance left half-received in `incoming` (it stopped in the
/// middle of one): files older than an hour, so uploads other instances are receiving now
/// stay.
fn purge_stale_uploads(incoming: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(incoming) else { return };
    let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    for entry in entries.flatten() {
        let stale = entry.metadata().ok().filter(|m| m.is_file()).and_then(|m| m.modified().ok()).is_some_and(|t| t < hour_ago);
        if stale && let Err(e) = std::fs::remove_file(entry.path()) {
            log::warn!("cannot remove the stale upload {}: {e}", entry.path().display());
        }
    }
}

/// Binds, migrates, bootstraps the first admin and serves until stopped.
pub async fn start(config: Config) -> anyhow::Result<Running> {
    let listener = TcpListener::bind(config.bind).with_context(|| format!("cannot listen on {}", config.bind))?;
    let addr = listener.local_addr()?;
    let public_url = config.public_url.clone().unwrap_or_else(|| format!("http://{addr}"));

    let wait = Duration::from_secs(config.db_start_wait_secs);
    let db = at_start("opening the database", wait, || {
        let db_config = config.clone();
        async move { tokio::task::spawn_blocking(move || open_database(&db_config)).await? }
    })
    .await?;
    let metrics = Arc::new(Metrics::new({
        let db = db.clone();
        move || adapters::pool_stats(&db)
    }));
    let calls: Arc<dyn CallRecorder> = Arc::new(adapters::PlatformCallMetrics(metrics.clone()));
    let jobs = Arc::new(Jobs::new(metrics.clone()));
    let sandbox = (config.platform == Platform::Sandbox).then(Sandbox::new);
    // One hasher, so its cap on concurrent bcrypt work holds across logins and user administration.
    let hasher = password_hasher(&config);
    let identity = identity_service(&config, &db, hasher.clone(), &public_url, sandbox.as_ref(), Some(calls.clone()))?;
    let docs = docs_service(&db);

    let bootstrap_password = if config.bootstrap_admin {
        at_start("creating the first admin", wait, || async { Ok(identity.bootstrap_admin().await?) }).await?
    } else {
        None
    };

    let org = Arc::new(OrgStore::new(db.clone(), FieldCipher::new(&config.master_key)));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let access: Arc<dyn AccessChanged> = Arc::new(adapters::IdentityAccessChanged(identity.session_cache()));
    let accounts = Arc::new(IdentityStore::new(db.clone()));
    let job_store: Arc<dyn JobStore> = Arc::new(DbJobStore::new(db.clone()));
    let idempotency: Arc<dyn IdempotencyStore> = Arc::new(DbIdempotencyStore::new(db.clone()));
    let payments = payment_service(&config, &db, &public_url, Some(calls.clone()), job_store.clone())?;
    let orders = Arc::new(OrderService::new(
        Arc::new(OrdersStore::new(db.clone())),
        payments.clone(),
        clock.clone(),
        OrderSettings {
            default_expiry: chrono::Duration::seconds(config.order_default_expires_in),
            min_expiry: chrono::Duration::seconds(config.order_min_expires_in),
            ..OrderSettings::default()
        },
    ));
    let releases = release_pipeline(&config, &db, &public_url, sandbox.as_ref(), Some(calls.clone()), job_store.clone())?;
    let preflight =
        Arc::new(atrium_miniprogram::PreflightService::new(releases.authorization().clone(), releases.platform().clone(), clock.clone()));
    let campaigns = Arc::new(atrium_miniprogram::CampaignService::new(
        Arc::new(atrium_store::CampaignStore::new(db.clone())),
        releases.clone(),
        preflight.clone(),
        job_store.clone(),
        clock.clone(),
        atrium_miniprogram::CampaignSettings {
            parallelism: config.campaign_parallelism,
            tick: chrono::Duration::milliseconds(i64::try_from(config.campaign_tick_ms).unwrap_or(i64::MAX)),
            ..atrium_miniprogram::CampaignSettings::default()
        },
    ));
    let incoming = config.package_dir.join("incoming");
    tokio::task::spawn_blocking({
        let incoming = incoming.clone();
        move || purge_stale_uploads(&incoming)
    });
    if config.jobs {
        let poll = Duration::from_millis(config.job_poll_ms);
        at_start("scheduling the reconciliation", wait, || async { Ok(payments.schedule_reconciliation().await?) }).await?;
        at_start("scheduling the payment sweep", wait, || async { Ok(payments.schedule_sweep().await?) }).await?;
        // The sharing job waits on the pay platform most of its run: a pool of its own keeps up
        // with the platform's pace and never holds up the settle jobs.
        let handler: Arc<dyn atrium_kernel::JobHandler> = payments.clone();
        let others = jobs::OnlyKinds::of(handler.clone(), &[atrium_payments::SHARE], false);
        jobs.run_queue("payments", job_store.clone(), Arc::new(others), poll);
        let sharing = Arc::new(jobs::OnlyKinds::of(handler, &[atrium_payments::SHARE], true));
        for name in jobs::SHARING_RUNNERS.iter().take(config.sharing_runners) {
            jobs.run_queue(name, job_store.clone(), sharing.clone(), poll);
        }
        let purge = Arc::new(jobs::IdempotencyPurge { records: idempotency.clone(), jobs: job_store.clone() });
        at_start("scheduling the idempotency purge", wait, || async { Ok(purge.schedule().await?) }).await?;
        jobs.run_queue("idempotency", job_store.clone(), purge, poll);
        let expiry =
            Arc::new(order_ledger::OrderExpiry { orders: orders.clone(), jobs: job_store.clone(), every_secs: config.order_sweep_secs });
        at_start("scheduling the order expiry", wait, || async { Ok(expiry.schedule().await?) }).await?;
        jobs.run_queue("orders", job_store.clone(), expiry, poll);
        jobs.run_queue("ledger", job_store.clone(), Arc::new(order_ledger::LedgerEvents { orders: orders.clone() }), poll);
        jobs.run_queue("releases", job_store.clone(), releases.clone(), poll);
        jobs.run_queue("campaigns", job_store.clone(), campaigns.clone(), poll);
        let release_purge = Arc::new(jobs::ReleasePurge {
            authorizations: releases.authorization().clone(),
            jobs: job_store.clone(),
            every_secs: config.release_purge_secs,
            retention: config.record_retention,
        });
        at_start("scheduling the release records purge", wait, || async { Ok(release_purge.schedule().await?) }).await?;
        jobs.run_queue("release_purge", job_store.clone(), release_purge, poll);
    }
    let state = web::Data::new(AppState {
        identity: identity.clone(),
        users: Arc::new(
            UserService::new(accounts.clone(), accounts.clone(), hasher, identity.session_cache(), clock.clone())
                .with_create_limit(config.user_creates_per_hour),
        ),
        partners: Arc::new(PartnerService::new(org.clone(), access.clone(), clock.clone())),
        tenants: Arc::new(TenantService::new(org.clone(), access.clone(), clock.clone())),
        employees: Arc::new(EmployeeService::new(org.clone(), clock.clone())),
        payroll: {
            let store = PayrollStore::new(db.clone());
            // Spreadsheet files are encoded and decoded off the actix workers, one per core at once.
            let tabular = Arc::new(atrium_tabular::Tabular::per_core());
            let files = FilePorts {
                accounts: store.payee_accounts(FieldCipher::new(&config.master_key)),
                writer: tabular.clone(),
                reader: tabular,
            };
            Arc::new(PayrollService::new(
                Arc::new(store),
                payslip_notifier(&config, &public_url, sandbox.as_ref(), Some(calls.clone()))?,
                files,
                clock.clone(),
            ))
        },
        roles: Arc::new(RoleService::new(accounts, identity.session_cache(), clock.clone())),
        audit: Arc::new(AuditService::new(org.clone())),
        docs: docs.clone(),
        payments,
        orders,
        release_authorization: releases.authorization().clone(),
        releases: releases.clone(),
        release_preflight: preflight,
        campaigns,
        package_incoming: incoming,
        idempotency,
        idempotency_stale_secs: config.idempotency_stale_secs,
        health: Arc::new(adapters::Readiness { db: db.clone(), jobs: jobs.clone() }),
        json_limit: config.json_limit,
        trust_proxy: config.trust_proxy,
        body_timeout: Duration::from_millis(config.client_body_timeout_ms),
        metrics: metrics.clone(),
        metrics_access: config.metrics.clone(),
    });
    let sb = sandbox.clone();
    let server = HttpServer::new(move || {
        let sb = sb.clone();
        atrium_api::configure(state.clone(), move |cfg| {
            if let Some(sb) = &sb {
                cfg.service(web::scope("/sandbox").configure(|c| sb.configure(c)));
            }
        })
    })
    .workers(config.workers.max(1))
    // Signals are the binary's to handle (SIGINT and SIGTERM alike stop gracefully).
    .disable_signals()
    .shutdown_timeout(config.shutdown_timeout_secs)
    .client_request_timeout(Duration::from_millis(config.client_request_timeout_ms))
    .client_disconnect_timeout(Duration::from_millis(config.client_disconnect_timeout_ms))
    .keep_alive(match config.keep_alive_secs {
        0 => KeepAlive::Disabled,
        secs => KeepAlive::Timeout(Duration::from_secs(secs)),
    })
    .listen(listener)?
    .run();
    let handle = server.handle();
    let server = tokio::spawn(server);
    if let Some(sb) = &sandbox {
        sandbox_platform_running(sb, releases.authorization().clone());
    }
    log::info!("atrium listening on http://{addr} ({} profile, metrics {})", config.profile.as_str(), config.metrics);
    Ok(Running {
        addr,
        handle,
        server,
        bootstrap_password,
        identity,
        docs,
        db,
        sandbox,
        metrics,
        jobs,
        shutdown_timeout: Duration::from_secs(config.shutdown_timeout_secs),
    })
}

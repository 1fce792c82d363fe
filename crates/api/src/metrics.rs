//! The instance's metrics, served at `/metrics` in the Prometheus text format (OpenMetrics
//! 1.0): requests by route template and status with latency histograms, the database pool,
//! background job runners by name and job queues and failures by job kind, and outbound
//! platform calls by endpoint and errcode. Each running server has its own registry.
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{Error, HttpRequest, HttpResponse, web};
use atrium_kernel::Reason;
use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use crate::app::AppState;
use crate::envelope::respond;
use crate::error::ErrorData;

/// The route label of a request that matched no route (never the raw path: the label set
/// must stay small whatever clients send).
pub const UNMATCHED: &str = "unmatched";

/// Request latency buckets in seconds, 5 ms to 30 s.
const LATENCY_BUCKETS: [f64; 12] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// Who may read `/metrics`.
#[derive(Clone, PartialEq, Eq)]
pub enum MetricsAccess {
    /// Not served (404).
    Off,
    /// Served to anyone who reaches the port.
    Open,
    /// Served with `Authorization: Bearer <token>` only.
    Token(String),
}

/// `off`, `open` or `token` (never the token itself).
impl std::fmt::Display for MetricsAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MetricsAccess::Off => "off",
            MetricsAccess::Open => "open",
            MetricsAccess::Token(_) => "token",
        })
    }
}

impl std::fmt::Debug for MetricsAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// The database pool as the metrics show it (filled by the composition root from the store).
#[derive(Debug, Clone, Copy, Default)]
pub struct DbPoolStats {
    pub max_size: u32,
    pub connections: u32,
    pub idle: u32,
    pub waiting: u64,
    pub checkouts: u64,
    pub wait_time: Duration,
    pub timeouts: u64,
    pub liveness_checks: u64,
}

// Every label value comes from a closed set, whatever clients or platforms send: the method
// from [`method_label`], the route from the route table (or [`UNMATCHED`]), the status from
// the statuses this server answers, the platform's outcome from `atrium_wechat::code_label`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: &'static str,
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    state: &'static str,
}

/// A job kind (`payment.settle_transaction`): what the queue holds.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    kind: String,
}

/// A runner (`payments`): what claims and runs the jobs of one or more kinds.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunnerLabels {
    runner: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    endpoint: &'static str,
    errcode: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointLabels {
    endpoint: &'static str,
}

/// The method label: a standard method by name, anything else a client makes up as `other`.
fn method_label(method: &Method) -> &'static str {
    const KNOWN: [Method; 9] = [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
        Method::OPTIONS,
        Method::CONNECT,
        Method::TRACE,
    ];
    KNOWN.iter().find(|m| *m == method).map_or("other", |m| m.as_str())
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// A labelled family exposed with its `# HELP`/`# TYPE` lines even before it has a series
/// (the library leaves empty families out), so dashboards and alerts can name it from the
/// start.
#[derive(Debug)]
struct Declared<M>(M);

impl<M: EncodeMetric> EncodeMetric for Declared<M> {
    fn encode(&self, encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        self.0.encode(encoder)
    }

    fn metric_type(&self) -> prometheus_client::metrics::MetricType {
        self.0.metric_type()
    }
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// Every series of one instance.
pub struct Metrics {
    registry: Registry,
    pool_source: Box<dyn Fn() -> DbPoolStats + Send + Sync>,
    requests: Family<RequestLabels, Counter>,
    latency: HistogramFamily<RouteLabels>,
    in_flight: Gauge,
    pool_connections: Family<PoolLabels, Gauge>,
    pool_max: Gauge,
    pool_waiting: Gauge,
    pool_checkouts: Counter,
    pool_wait_seconds: Counter<f64, AtomicU64>,
    pool_timeouts: Counter,
    pool_liveness_checks: Counter,
    jobs_queued: Family<JobLabels, Gauge>,
    jobs_failed: Family<JobLabels, Counter>,
    jobs_completed: Family<JobLabels, Counter>,
    job_runners: Family<RunnerLabels, Gauge>,
    platform_calls: Family<CallLabels, Counter>,
    platform_latency: HistogramFamily<EndpointLabels>,
    payment_discrepancies: Gauge,
}

impl Metrics {
    /// A registry with every series registered (job and platform series too, before any job
    /// kind or call exists, so dashboards and alerts can be written against them);
    /// `pool_source` is read at each scrape.
    pub fn new(pool_source: impl Fn() -> DbPoolStats + Send + Sync + 'static) -> Metrics {
        let mut m = Metrics {
            registry: Registry::default(),
            pool_source: Box::new(pool_source),
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            in_flight: Gauge::default(),
            pool_connections: Family::default(),
            pool_max: Gauge::default(),
            pool_waiting: Gauge::default(),
            pool_checkouts: Counter::default(),
            pool_wait_seconds: Counter::default(),
            pool_timeouts: Counter::default(),
            pool_liveness_checks: Counter::default(),
            jobs_queued: Family::default(),
            jobs_failed: Family::default(),
            jobs_completed: Family::default(),
            job_runners: Family::default(),
            platform_calls: Family::default(),
            platform_latency: Family::new_with_constructor(latency_histogram),
            payment_discrepancies: Gauge::default(),
        };
        let r = &mut m.registry;
        r.register("atrium_http_requests", "HTTP requests answered, by method, route template and status", Declared(m.requests.clone()));
        r.register(
            "atrium_http_request_duration_seconds",
            "Time from request head to response, by method and route template",
            Declared(m.latency.clone()),
        );
        r.register("atrium_http_requests_in_flight", "Requests being handled now", m.in_flight.clone());
        r.register("atrium_db_pool_connections", "Open database connections by state (idle, in_use)", Declared(m.pool_connections.clone()));
        r.register("atrium_db_pool_max_connections", "The most connections the pool opens", m.pool_max.clone());
        r.register("atrium_db_pool_waiting", "Callers waiting for a database connection now", m.pool_waiting.clone());
        r.register("atrium_db_pool_checkouts", "Database connections handed out", m.pool_checkouts.clone());
        r.register("atrium_db_pool_wait_seconds", "Time spent waiting for database connections", m.pool_wait_seconds.clone());
        r.register(
            "atrium_db_pool_timeouts",
            "Callers that got no database connection within ATRIUM_DB_TIMEOUT_MS (each answered 503)",
            m.pool_timeouts.clone(),
        );
        r.register(
            "atrium_db_pool_liveness_checks",
            "Checkouts that asked the database whether an idle connection was still there (PostgreSQL)",
            m.pool_liveness_checks.clone(),
        );
        r.register("atrium_jobs_queued", "Background jobs due to run, by job kind", Declared(m.jobs_queued.clone()));
        r.register("atrium_jobs_failed", "Background jobs that failed for good, by job kind", Declared(m.jobs_failed.clone()));
        r.register("atrium_jobs_completed", "Background job runs that finished their job, by job kind", Declared(m.jobs_completed.clone()));
        r.register("atrium_job_runners", "Background job runners alive (1) or not (0), by runner", Declared(m.job_runners.clone()));
        r.register(
            "atrium_platform_calls",
            "Calls to the messaging and pay platforms, by endpoint and errcode (0 success, `transport` no answer)",
            Declared(m.platform_calls.clone()),
        );
        r.register(
            "atrium_platform_call_duration_seconds",
            "Time of calls to the messaging and pay platforms, by endpoint",
            Declared(m.platform_latency.clone()),
        );
        r.register(
            "atrium_payment_discrepancies",
            "Payment transactions holding a discrepancy: a payment the platform reported that does not match (amount or currency), never taken as paid",
            m.payment_discrepancies.clone(),
        );
        m
    }

    /// Sets how many payment transactions hold a discrepancy.
    pub fn payment_discrepancies(&self, n: u64) {
        self.payment_discrepancies.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Records one answered request. `route` is the matched route template.
    pub fn request(&self, method: &Method, route: &str, status: StatusCode, elapsed: Duration) {
        let method = method_label(method);
        self.requests.get_or_create(&RequestLabels { method, route: route.to_owned(), status: status.as_u16() }).inc();
        self.latency.get_or_create(&RouteLabels { method, route: route.to_owned() }).observe(elapsed.as_secs_f64());
    }

    /// Sets how many jobs of `kind` wait to run.
    pub fn job_queue_depth(&self, kind: &str, depth: u64) {
        self.jobs_queued.get_or_create(&JobLabels { kind: kind.to_owned() }).set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    /// Counts a failed run of a job of `kind`.
    pub fn job_failed(&self, kind: &str) {
        self.jobs_failed.get_or_create(&JobLabels { kind: kind.to_owned() }).inc();
    }

    /// Counts a run that finished a job of `kind`.
    pub fn job_completed(&self, kind: &str) {
        self.jobs_completed.get_or_create(&JobLabels { kind: kind.to_owned() }).inc();
    }

    /// Sets whether the runner named `runner` is alive (1) or not (0).
    pub fn job_runner(&self, runner: &str, alive: bool) {
        self.job_runners.get_or_create(&RunnerLabels { runner: runner.to_owned() }).set(i64::from(alive));
    }

    /// Makes the queue, failure and completion series of job kind `kind` appear at zero (a
    /// runner of the kind started), so alerts on them work before its first job.
    pub fn job_kind(&self, kind: &str) {
        let labels = JobLabels { kind: kind.to_owned() };
        drop(self.jobs_queued.get_or_create(&labels));
        drop(self.jobs_failed.get_or_create(&labels));
        drop(self.jobs_completed.get_or_create(&labels));
    }

    /// Records one outbound platform call: `endpoint` is the API path without query (e.g.
    /// `/cgi-bin/token`), `errcode` the platform's errcode (`0` on success) or `transport`,
    /// both from the platform client's closed sets.
    pub fn platform_call(&self, endpoint: &'static str, errcode: &'static str, elapsed: Duration) {
        self.platform_calls.get_or_create(&CallLabels { endpoint, errcode }).inc();
        self.platform_latency.get_or_create(&EndpointLabels { endpoint }).observe(elapsed.as_secs_f64());
    }

    /// The text exposition of every series, with the pool read now.
    pub fn render(&self) -> String {
        self.sync_pool((self.pool_source)());
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            log::error!("cannot encode the metrics: {e}");
        }
        out
    }

    fn sync_pool(&self, s: DbPoolStats) {
        let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.pool_connections.get_or_create(&PoolLabels { state: "idle" }).set(gauge(u64::from(s.idle)));
        self.pool_connections.get_or_create(&PoolLabels { state: "in_use" }).set(gauge(u64::from(s.connections.saturating_sub(s.idle))));
        self.pool_max.set(gauge(u64::from(s.max_size)));
        self.pool_waiting.set(gauge(s.waiting));
        // The store counts since the pool opened; the counters follow it.
        self.pool_checkouts.inc_by(s.checkouts.saturating_sub(self.pool_checkouts.get()));
        let waited = s.wait_time.as_secs_f64() - self.pool_wait_seconds.get();
        if waited > 0.0 {
            self.pool_wait_seconds.inc_by(waited);
        }
        self.pool_timeouts.inc_by(s.timeouts.saturating_sub(self.pool_timeouts.get()));
        self.pool_liveness_checks.inc_by(s.liveness_checks.saturating_sub(self.pool_liveness_checks.get()));
    }
}

/// Counts every request by its route template (`/api/v1/employees/{id}`, never the path a
/// client sent) and status, and times it.
pub async fn middleware(req: ServiceRequest, next: Next<impl MessageBody>) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        return next.call(req).await;
    };
    let method = req.method().clone();
    let started = Instant::now();
    state.metrics.in_flight.inc();
    let res = next.call(req).await;
    state.metrics.in_flight.dec();
    let (route, status) = match &res {
        Ok(r) => (r.request().match_pattern().unwrap_or_else(|| UNMATCHED.to_owned()), r.status()),
        Err(e) => (UNMATCHED.to_owned(), e.as_response_error().status_code()),
    };
    state.metrics.request(&method, &route, status, started.elapsed());
    res
}

/// `GET /metrics` (registered unless metrics are off).
pub async fn scrape(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if let MetricsAccess::Token(token) = &state.metrics_access {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .unwrap_or_default();
        if !atrium_kernel::secret::constant_time_eq(given.as_bytes(), token.as_bytes()) {
            let mut resp = respond(
                StatusCode::UNAUTHORIZED,
                401,
                "metrics need the metrics bearer token",
                Some(ErrorData::new(Reason::Unauthenticated)),
            );
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return resp;
        }
    }
    // Read from the database at each scrape, so every instance shows the same count.
    match state.payments.open_discrepancies().await {
        Ok(n) => state.metrics.payment_discrepancies(n),
        Err(e) => log::warn!("counting payment discrepancies failed: {e}"),
    }
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8"))
        .body(state.metrics.render())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_is_registered_before_anything_happens() {
        let m = Metrics::new(DbPoolStats::default);
        let text = m.render();
        for name in [
            "atrium_http_requests_total",
            "atrium_http_request_duration_seconds",
            "atrium_db_pool_connections",
            "atrium_db_pool_timeouts_total",
            "atrium_jobs_queued",
            "atrium_jobs_failed_total",
            "atrium_jobs_completed_total",
            "atrium_job_runners",
            "atrium_platform_calls_total",
        ] {
            assert!(text.contains(&format!("# TYPE {}", name.trim_end_matches("_total"))), "{name} missing:\n{text}");
        }
    }

    #[test]
    fn pool_counters_follow_the_store() {
        let m = Metrics::new(|| DbPoolStats {
            max_size: 4,
            connections: 3,
            idle: 1,
            waiting: 2,
            checkouts: 10,
            wait_time: Duration::from_millis(1500),
            timeouts: 1,
            liveness_checks: 3,
        });
        m.render();
        let text = m.render();
        assert!(text.contains("atrium_db_pool_connections{state=\"in_use\"} 2"), "{text}");
        assert!(text.contains("atrium_db_pool_checkouts_total 10"), "{text}");
        assert!(text.contains("atrium_db_pool_timeouts_total 1"), "{text}");
        assert!(text.contains("atrium_db_pool_liveness_checks_total 3"), "{text}");
        assert!(text.contains("atrium_db_pool_wait_seconds_total 1.5"), "{text}");
    }

    #[test]
    fn requests_and_platform_calls_carry_their_labels() {
        let m = Metrics::new(DbPoolStats::default);
        m.request(&Method::GET, "/api/v1/employees/{id}", StatusCode::OK, Duration::from_millis(3));
        m.platform_call("/cgi-bin/token", "40013", Duration::from_millis(20));
        m.job_runner("payouts", true);
        m.job_kind("payout.settle");
        let text = m.render();
        assert!(text.contains(r#"atrium_http_requests_total{method="GET",route="/api/v1/employees/{id}",status="200"} 1"#), "{text}");
        assert!(text.contains(r#"atrium_platform_calls_total{endpoint="/cgi-bin/token",errcode="40013"} 1"#), "{text}");
        assert!(text.contains(r#"atrium_job_runners{runner="payouts"} 1"#), "{text}");
        assert!(text.contains(r#"atrium_jobs_queued{kind="payout.settle"} 0"#), "{text}");
        assert!(text.contains(r#"atrium_jobs_failed_total{kind="payout.settle"} 0"#), "{text}");
        assert!(text.contains(r#"atrium_jobs_completed_total{kind="payout.settle"} 0"#), "{text}");
        // A runner is not a job kind, nor a job kind a runner.
        assert!(!text.contains(r#"{kind="payouts"}"#) && !text.contains(r#"{runner="payout.settle"}"#), "{text}");
    }

    #[test]
    fn made_up_methods_share_one_label_value() {
        let m = Metrics::new(DbPoolStats::default);
        for i in 0..1000 {
            let method = Method::from_bytes(format!("PTXYZ{i}").as_bytes()).expect("a token is a method");
            m.request(&method, UNMATCHED, StatusCode::NOT_FOUND, Duration::from_millis(1));
        }
        m.request(&Method::PATCH, UNMATCHED, StatusCode::NOT_FOUND, Duration::from_millis(1));
        let text = m.render();
        assert!(text.contains(r#"atrium_http_requests_total{method="other",route="unmatched",status="404"} 1000"#), "{text}");
        assert!(text.contains(r#"atrium_http_requests_total{method="PATCH",route="unmatched",status="404"} 1"#), "{text}");
        assert!(!text.contains("PTXYZ"), "a made-up method became a label value");
        assert_eq!(text.lines().filter(|l| l.starts_with("atrium_http_requests_total{")).count(), 2, "{text}");
    }
}

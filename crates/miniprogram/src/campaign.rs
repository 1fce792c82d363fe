//! Release campaigns: one version of a template shipped to many tenants' mini-programs in
//! waves. A campaign names its tenants when it is created; each wave takes its share of them
//! when it starts; each tenant then goes through the same upload, audit and release tasks as a
//! single-tenant release. This module holds the records, their statuses and the rules that
//! need no storage: checking what a client sends, sizing the waves, and when a wave is settled.
use crate::model::{PrivacySettings, ReleaseMode, ServerDomains};
use atrium_kernel::{Error, FieldError, Id, ListQuery, Timestamp};
use serde::{Deserialize, Serialize};

/// The most tenants one campaign may name.
pub const MAX_CAMPAIGN_TENANTS: usize = 100_000;
/// The most waves one campaign may have.
pub const MAX_WAVES: usize = 20;
/// The default first wave: 5 % of the tenants (at least one).
pub const CANARY_PERCENT: u8 = 5;

/// A campaign's status: `draft` → `running` ⇄ `paused` → `completed`; `cancelled` from any
/// but `completed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum CampaignStatus {
    /// Created, not started: nothing has happened to any tenant.
    Draft,
    /// Its waves are moving.
    Running,
    /// Stopped by a rule or by hand; `resume` goes on where it stopped.
    Paused,
    /// Every wave is done.
    Completed,
    /// Stopped for good; what was released stays released.
    Cancelled,
}

impl CampaignStatus {
    /// Running or paused: its tenants cannot be in another campaign that starts.
    pub fn is_active(self) -> bool {
        matches!(self, CampaignStatus::Running | CampaignStatus::Paused)
    }
}

/// Why a campaign paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum PauseReason {
    /// A wave's rejections exceeded `max_rejections`.
    Rejections,
    /// The platform's audit quota is used up.
    Quota,
    /// Someone paused it.
    Manual,
    /// More than half of a wave's tenants failed.
    Failures,
}

/// A wave's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum WaveStatus {
    /// Not started; its tenants are not chosen yet.
    Waiting,
    /// Started: its tenants are moving.
    Running,
    /// Every tenant of it is settled.
    Done,
}

/// A tenant's progress in a campaign.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum CampaignTenantStatus {
    /// Not started (not in a started wave, or held back by the quota).
    Pending,
    /// A pre-flight check failed; `reason` names it.
    PreflightFailed,
    /// Its upload task runs.
    Uploading,
    /// Its audit runs.
    Auditing,
    /// Its audit passed; the release comes next.
    Passed,
    /// Its audit was rejected; `reason` says why.
    Rejected,
    /// Its release is being made.
    Releasing,
    /// Released as its wave says.
    Released,
    /// A step failed for good (revoked authorisation, a refusal, retries used up).
    Failed,
    /// Left out: the campaign was cancelled before it started.
    Skipped,
}

impl CampaignTenantStatus {
    /// Nothing more happens to it in this wave (until a retry).
    pub fn is_settled(self) -> bool {
        use CampaignTenantStatus::*;
        matches!(self, PreflightFailed | Rejected | Released | Failed | Skipped)
    }

    /// A retry starts it again: failed, rejected or pre-flight failed.
    pub fn is_retryable(self) -> bool {
        use CampaignTenantStatus::*;
        matches!(self, PreflightFailed | Rejected | Failed)
    }

    /// Moving, and needing a step of ours (not waiting for the reviewers): what the
    /// parallelism bound counts.
    pub fn needs_step(self) -> bool {
        use CampaignTenantStatus::*;
        matches!(self, Uploading | Passed | Releasing)
    }
}

/// How many of the tenants a wave takes: a percentage of all the campaign's tenants, or a
/// count. The last wave takes whatever is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum WaveSize {
    /// 1–100 % of the campaign's tenants, at least one.
    Percent(u8),
    /// This many tenants, at least one.
    Count(u32),
}

/// How a wave releases a passed audit: `"full"` or `{"gray": 1..100}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaveRelease {
    /// To every user.
    #[serde(rename = "full")]
    Full,
    /// To this percentage of users (1–100).
    #[serde(untagged)]
    Gray {
        /// The percentage of users.
        gray: u8,
    },
}

/// Read by hand: `"full"`, or an object whose `gray` is a whole number (other members are
/// ignored, as for any object of the API); the range is checked with the waves.
impl<'de> Deserialize<'de> for WaveRelease {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let wrong = || D::Error::custom("must be \"full\" or {\"gray\": 1 to 100}");
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) if s == "full" => Ok(WaveRelease::Full),
            serde_json::Value::Object(m) => {
                let whole = |g: &serde_json::Value| {
                    g.as_u64().or_else(|| g.as_f64().filter(|f| f.fract() == 0.0 && (0.0..=255.0).contains(f)).map(|f| f as u64))
                };
                let gray = m.get("gray").and_then(whole).and_then(|g| u8::try_from(g).ok()).ok_or_else(wrong)?;
                Ok(WaveRelease::Gray { gray })
            }
            _ => Err(wrong()),
        }
    }
}

// Written out: the derive renders an untagged struct variant as if it were tagged.
atrium_kernel::string_schemas!(
    WaveRelease => atrium_kernel::schema::schema_from_json(serde_json::json!({
        "description": "How a wave releases a passed audit: `\"full\"` or `{\"gray\": 1..100}`.",
        "oneOf": [
            {"type": "string", "enum": ["full"], "description": "To every user."},
            {
                "type": "object",
                "description": "To this percentage of users.",
                "properties": {"gray": {"type": "integer", "minimum": 1, "maximum": 100}},
                "required": ["gray"],
            },
        ],
    }))
);

impl WaveRelease {
    /// As the pipeline's release mode.
    pub fn mode(self) -> ReleaseMode {
        match self {
            WaveRelease::Full => ReleaseMode::Full,
            WaveRelease::Gray { gray } => ReleaseMode::Gray(gray),
        }
    }
}

/// A wave as a client asks for it: `{percent | count, release}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct WaveInput {
    /// 1–100: this percentage of the campaign's tenants (at least one).
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100))]
    pub percent: Option<i64>,
    /// This many tenants (at least one).
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100000))]
    pub count: Option<i64>,
    /// `"full"` or `{"gray": 1..100}`.
    pub release: WaveRelease,
}

/// One wave of a campaign.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Wave {
    /// 0 for the first wave.
    pub index: u32,
    /// The percentage of the campaign's tenants it takes, when sized so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percent: Option<u8>,
    /// How many tenants it takes, when sized so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// How it releases.
    pub release: WaveRelease,
    /// `waiting`, `running` or `done`.
    pub status: WaveStatus,
    /// The tenants it took when it started (0 before).
    pub tenants: u32,
}

impl Wave {
    /// Its size as asked.
    pub fn size(&self) -> WaveSize {
        match (self.percent, self.count) {
            (Some(p), _) => WaveSize::Percent(p),
            (None, Some(c)) => WaveSize::Count(c),
            (None, None) => WaveSize::Percent(100),
        }
    }
}

/// Which tenants a campaign ships to: `{"all": true}`, `{"partner_id": n}` or
/// `{"tenant_ids": [..]}`; always within the creator's scope, and only tenants whose
/// mini-program is authorised for the first two.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TenantSelection {
    /// `true`: every tenant in the caller's scope whose mini-program is authorised (`false`
    /// is the same as leaving it out).
    pub all: Option<bool>,
    /// Every tenant of this partner whose mini-program is authorised.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 1))]
    pub partner_id: Option<Id>,
    /// These tenants (each in the caller's scope, named once).
    #[cfg_attr(feature = "openapi", schema(schema_with = tenant_id_list))]
    pub tenant_ids: Option<Vec<Id>>,
}

/// 1 to [`MAX_CAMPAIGN_TENANTS`] distinct tenant ids, or null (left out).
#[cfg(feature = "openapi")]
fn tenant_id_list() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    atrium_kernel::schema::schema_from_json(serde_json::json!({
        "type": ["array", "null"],
        "minItems": 1,
        "maxItems": MAX_CAMPAIGN_TENANTS,
        "uniqueItems": true,
        "items": {"type": "integer", "format": "int64", "minimum": 1},
    }))
}

/// The selection, checked: exactly one way of choosing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Every authorised tenant in scope.
    All,
    /// Every authorised tenant of the partner.
    Partner(Id),
    /// These tenants, in this order, without repeats.
    Tenants(Vec<Id>),
}

impl TenantSelection {
    /// Checks the selection: exactly one of the three (`all` counts when true), a tenant list
    /// of 1 to [`MAX_CAMPAIGN_TENANTS`] ids, each ≥ 1 and named once.
    pub fn check(&self) -> Result<Selection, Error> {
        let all = self.all == Some(true);
        let chosen = [all, self.partner_id.is_some(), self.tenant_ids.is_some()].iter().filter(|c| **c).count();
        if chosen != 1 {
            return Err(Error::invalid("tenants", "name exactly one of all, partner_id or tenant_ids"));
        }
        if all {
            return Ok(Selection::All);
        }
        if let Some(p) = self.partner_id {
            return if p >= 1 { Ok(Selection::Partner(p)) } else { Err(Error::invalid("tenants.partner_id", "must be at least 1")) };
        }
        let ids = self.tenant_ids.as_deref().unwrap_or_default();
        if ids.is_empty() {
            return Err(Error::invalid("tenants.tenant_ids", "must name at least one tenant"));
        }
        if ids.len() > MAX_CAMPAIGN_TENANTS {
            return Err(Error::invalid("tenants.tenant_ids", format!("at most {MAX_CAMPAIGN_TENANTS} tenants")));
        }
        let mut errors = Vec::new();
        let mut seen = std::collections::HashSet::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            if *id < 1 {
                errors.push(FieldError::new(format!("tenants.tenant_ids[{i}]"), "must be at least 1"));
            } else if !seen.insert(*id) {
                errors.push(FieldError::new(format!("tenants.tenant_ids[{i}]"), format!("tenant {id} is named twice")));
            }
        }
        if errors.is_empty() { Ok(Selection::Tenants(ids.to_vec())) } else { Err(Error::Invalid(errors)) }
    }
}

/// Checks the waves asked for; none means the default: [`CANARY_PERCENT`] % (at least one
/// tenant) released in full, then the rest in full. Percent waves must rise and stay within
/// 100; gray within 1–100; at most [`MAX_WAVES`]. The last wave always takes what is left.
pub fn plan_waves(input: Option<&[WaveInput]>) -> Result<Vec<Wave>, Error> {
    let Some(input) = input else {
        return Ok(vec![
            Wave {
                index: 0,
                percent: Some(CANARY_PERCENT),
                count: None,
                release: WaveRelease::Full,
                status: WaveStatus::Waiting,
                tenants: 0,
            },
            Wave { index: 1, percent: Some(100), count: None, release: WaveRelease::Full, status: WaveStatus::Waiting, tenants: 0 },
        ]);
    };
    if input.is_empty() {
        return Err(Error::invalid("waves", "must hold at least one wave, or be left out for the default"));
    }
    if input.len() > MAX_WAVES {
        return Err(Error::invalid("waves", format!("at most {MAX_WAVES} waves")));
    }
    let mut errors = Vec::new();
    let mut waves = Vec::with_capacity(input.len());
    let mut last_percent = 0i64;
    for (i, w) in input.iter().enumerate() {
        let field = |f: &str| format!("waves[{i}].{f}");
        let (percent, count) = match (w.percent, w.count) {
            (Some(p), None) => {
                if !(1..=100).contains(&p) {
                    errors.push(FieldError::new(field("percent"), "must be between 1 and 100"));
                } else if p <= last_percent {
                    errors.push(FieldError::new(
                        field("percent"),
                        format!("percentages are of all the tenants and must rise: the wave before reached {last_percent}"),
                    ));
                }
                last_percent = last_percent.max(p);
                (u8::try_from(p.clamp(1, 100)).ok(), None)
            }
            (None, Some(c)) => {
                if !(1..=MAX_CAMPAIGN_TENANTS as i64).contains(&c) {
                    errors.push(FieldError::new(field("count"), format!("must be between 1 and {MAX_CAMPAIGN_TENANTS}")));
                }
                (None, u32::try_from(c.clamp(1, MAX_CAMPAIGN_TENANTS as i64)).ok())
            }
            _ => {
                errors.push(FieldError::new(format!("waves[{i}]"), "give exactly one of percent or count"));
                (None, None)
            }
        };
        if let WaveRelease::Gray { gray } = w.release
            && !(1..=100).contains(&gray)
        {
            errors.push(FieldError::new(field("release.gray"), "must be between 1 and 100"));
        }
        waves.push(Wave { index: i as u32, percent, count, release: w.release, status: WaveStatus::Waiting, tenants: 0 });
    }
    if errors.is_empty() { Ok(waves) } else { Err(Error::Invalid(errors)) }
}

/// How many tenants wave `wave` takes when it starts: its share of `total` (a percentage
/// counts from all the tenants, less what the waves before took; at least one), all that is
/// left for the last wave, never more than is left.
pub fn wave_take(waves: &[Wave], wave: usize, total: u32, taken_before: u32) -> u32 {
    let left = total.saturating_sub(taken_before);
    let Some(w) = waves.get(wave) else { return 0 };
    if wave + 1 == waves.len() {
        return left;
    }
    let want = match w.size() {
        WaveSize::Percent(p) => {
            let upto = (u64::from(total) * u64::from(p)).div_ceil(100) as u32;
            upto.saturating_sub(taken_before).max(1)
        }
        WaveSize::Count(c) => c,
    };
    want.min(left)
}

/// The `ext_json` a tenant's upload gets: the campaign's, with the strings `{tenant_id}` and
/// `{authorizer_appid}` replaced in every string (keys too) for this tenant.
pub fn ext_json_for(template: &serde_json::Value, tenant_id: Id, authorizer_appid: &str) -> serde_json::Value {
    use serde_json::Value;
    let fill = |s: &str| s.replace("{tenant_id}", &tenant_id.to_string()).replace("{authorizer_appid}", authorizer_appid);
    match template {
        Value::String(s) => Value::String(fill(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| ext_json_for(v, tenant_id, authorizer_appid)).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (fill(k), ext_json_for(v, tenant_id, authorizer_appid))).collect()),
        other => other.clone(),
    }
}

/// A release campaign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Campaign {
    /// 0 until stored.
    pub id: Id,
    /// A name for people.
    pub name: String,
    /// Who may see and steer it: the creator's party's partner (`None` for the platform).
    pub partner_id: Option<Id>,
    /// Its status.
    pub status: CampaignStatus,
    /// The template of the library each tenant's upload commits.
    pub template_id: i64,
    /// The version each tenant gets.
    pub version: String,
    /// The upload's description.
    pub description: String,
    /// The audit's version description.
    pub version_desc: Option<String>,
    /// The `ext_json` template (see [`ext_json_for`]).
    pub ext_json: serde_json::Value,
    /// Its waves.
    pub waves: Vec<Wave>,
    /// The wave that started last, if any.
    pub current_wave: Option<u32>,
    /// Whether the next wave starts by itself once the current one is settled.
    pub auto_advance: bool,
    /// The rejections a wave may have before the campaign pauses.
    pub max_rejections: u32,
    /// Domains each tenant gets in its pre-flight, when given.
    pub domains: Option<ServerDomains>,
    /// Privacy settings each tenant gets in its pre-flight, when given.
    pub privacy: Option<PrivacySettings>,
    /// Why it is paused.
    pub paused_reason: Option<PauseReason>,
    /// How many tenants it names.
    pub tenant_total: u32,
    /// Who created it.
    pub created_by: Id,
    /// When.
    pub created_at: Timestamp,
    /// When it started.
    pub started_at: Option<Timestamp>,
    /// When it completed or was cancelled.
    pub finished_at: Option<Timestamp>,
    /// Bumped by every write: a write is conditional on the revision it read.
    pub revision: i64,
}

/// A tenant of a campaign and its progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignTenant {
    /// The campaign.
    pub campaign_id: Id,
    /// The tenant.
    pub tenant_id: Id,
    /// Its mini-program when the campaign was created (or last seen).
    pub authorizer_appid: Option<String>,
    /// The wave that took it (none before).
    pub wave: Option<u32>,
    /// Its progress.
    pub status: CampaignTenantStatus,
    /// Its upload task, once uploading.
    pub upload_task_id: Option<Id>,
    /// Its audit task, once submitted.
    pub audit_task_id: Option<Id>,
    /// Its release task, once released.
    pub release_task_id: Option<Id>,
    /// Why it failed, was rejected or did not pass its pre-flight.
    pub reason: Option<String>,
    /// The platform's errcode, when one decided it.
    pub errcode: Option<i64>,
    /// Steps tried and failed in a row (reset by a step that succeeds and by a retry).
    pub attempts: u32,
    /// When the next step is due (a failed step waits out its back-off).
    pub next_at: Option<Timestamp>,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// Bumped by every write: a write is conditional on the revision it read, so of two
    /// instances taking the same step one wins and the other leaves it.
    pub revision: i64,
}

/// Filters of a campaign's tenant list.
#[derive(Debug, Clone, Default)]
pub struct CampaignTenantQuery {
    /// Paging (sorted by tenant id).
    pub list: ListQuery<CampaignTenantSort>,
    /// Only tenants in this status.
    pub status: Option<CampaignTenantStatus>,
    /// Only this wave's tenants.
    pub wave: Option<u32>,
}

/// What a campaign's tenant list may be sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum CampaignTenantSort {
    /// By tenant id (the default, ascending).
    TenantId,
    /// By last change.
    UpdatedAt,
}

/// Filters of the campaign list.
#[derive(Debug, Clone, Default)]
pub struct CampaignQuery {
    /// Paging (newest first by default).
    pub list: ListQuery<crate::model::TaskSort>,
    /// Only campaigns in this status.
    pub status: Option<CampaignStatus>,
}

// --- what clients send and receive ------------------------------------------------------

/// `POST /miniprogram/campaigns`: a draft campaign.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"name": "Spring release", "template_id": 1, "version": "2.0.0", "description": "Spring release", "ext_json": {"extAppid": "{authorizer_appid}", "ext": {"tenant": "{tenant_id}"}}, "tenants": {"all": true}, "waves": [{"count": 5, "release": {"gray": 10}}, {"percent": 100, "release": "full"}], "auto_advance": true, "max_rejections": 1})))]
pub struct NewCampaign {
    /// A name for people, 1–100 characters.
    pub name: atrium_kernel::Text<100>,
    /// The template of the platform's library each tenant's upload commits.
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub template_id: i64,
    /// The version each tenant gets; unique per tenant.
    pub version: crate::api::Version,
    /// The version's description users see.
    pub description: crate::api::VersionDescription,
    /// A note for the platform's reviewers.
    pub version_desc: Option<crate::api::VersionDescription>,
    /// Each tenant's `ext_json`, an object: the strings `{tenant_id}` and `{authorizer_appid}`
    /// in it are replaced per tenant. Default `{}`.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub ext_json: Option<serde_json::Map<String, serde_json::Value>>,
    /// Which tenants: `{"all": true}`, `{"partner_id": n}` or `{"tenant_ids": [..]}`.
    pub tenants: TenantSelection,
    /// The waves; default 5 % (at least one tenant), then the rest, both in full.
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 20))]
    pub waves: Option<Vec<WaveInput>>,
    /// Whether the next wave starts by itself once the current one is settled; default
    /// false (`advance` starts it).
    pub auto_advance: Option<bool>,
    /// Rejections a wave may have before the campaign pauses; default 1.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 100000))]
    pub max_rejections: Option<i64>,
    /// Server domains each tenant gets in its pre-flight.
    pub domains: Option<ServerDomains>,
    /// Privacy settings each tenant gets in its pre-flight.
    pub privacy: Option<PrivacySettings>,
}

/// A campaign as clients see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CampaignView {
    /// Its id.
    pub id: Id,
    /// Its name.
    pub name: String,
    /// `draft`, `running`, `paused`, `completed` or `cancelled`.
    pub status: CampaignStatus,
    /// The partner it belongs to (`null`: the platform's).
    pub partner_id: Option<Id>,
    /// The template each tenant's upload commits.
    pub template_id: i64,
    /// The version each tenant gets.
    pub version: String,
    /// The version's description.
    pub description: String,
    /// The note for the reviewers.
    pub version_desc: Option<String>,
    /// The `ext_json` template.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub ext_json: serde_json::Value,
    /// Its waves.
    pub waves: Vec<Wave>,
    /// The wave started last (0 for the first), `null` before the start.
    pub current_wave: Option<u32>,
    /// Whether waves start by themselves.
    pub auto_advance: bool,
    /// Rejections a wave may have before the campaign pauses.
    pub max_rejections: u32,
    /// Domains applied in each tenant's pre-flight.
    pub domains: Option<ServerDomains>,
    /// Privacy settings applied in each tenant's pre-flight.
    pub privacy: Option<PrivacySettings>,
    /// How many tenants it names.
    pub tenant_total: u32,
    /// Tenants per status (statuses with none left out).
    #[cfg_attr(feature = "openapi", schema(value_type = std::collections::BTreeMap<String, u32>))]
    pub counts: std::collections::BTreeMap<&'static str, u32>,
    /// Why it is paused: `rejections`, `quota`, `manual` or `failures`.
    pub paused_reason: Option<PauseReason>,
    /// Who created it.
    pub created_by: Id,
    /// When.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// When it started.
    pub started_at: Option<chrono::DateTime<chrono::Utc>>,
    /// When it completed or was cancelled.
    pub finished_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl CampaignView {
    /// The view of `c` with its tenants' `counts`.
    pub fn new(c: Campaign, counts: Vec<(CampaignTenantStatus, u32)>) -> Self {
        CampaignView {
            id: c.id,
            name: c.name,
            status: c.status,
            partner_id: c.partner_id,
            template_id: c.template_id,
            version: c.version,
            description: c.description,
            version_desc: c.version_desc,
            ext_json: c.ext_json,
            waves: c.waves,
            current_wave: c.current_wave,
            auto_advance: c.auto_advance,
            max_rejections: c.max_rejections,
            domains: c.domains,
            privacy: c.privacy,
            tenant_total: c.tenant_total,
            counts: counts.into_iter().map(|(s, n)| (s.into(), n)).collect(),
            paused_reason: c.paused_reason,
            created_by: c.created_by,
            created_at: c.created_at,
            started_at: c.started_at,
            finished_at: c.finished_at,
        }
    }
}

/// A tenant of a campaign as clients see it. Its upload, audit and release tasks are the
/// single-tenant routes' tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CampaignTenantView {
    /// The tenant.
    pub tenant_id: Id,
    /// Its mini-program.
    pub authorizer_appid: Option<String>,
    /// The wave that took it (`null` before).
    pub wave: Option<u32>,
    /// Its progress.
    pub status: CampaignTenantStatus,
    /// Its upload task.
    pub upload_task_id: Option<Id>,
    /// Its audit task.
    pub audit_task_id: Option<Id>,
    /// Its release task.
    pub release_task_id: Option<Id>,
    /// Why it failed, was rejected or did not pass its pre-flight.
    pub reason: Option<String>,
    /// The platform's errcode, when one decided it.
    pub errcode: Option<i64>,
    /// Steps tried and failed in a row.
    pub attempts: u32,
    /// When it last changed.
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

impl From<CampaignTenant> for CampaignTenantView {
    fn from(t: CampaignTenant) -> Self {
        CampaignTenantView {
            tenant_id: t.tenant_id,
            authorizer_appid: t.authorizer_appid,
            wave: t.wave,
            status: t.status,
            upload_task_id: t.upload_task_id,
            audit_task_id: t.audit_task_id,
            release_task_id: t.release_task_id,
            reason: t.reason,
            errcode: t.errcode,
            attempts: t.attempts,
            updated_at: t.updated_at,
        }
    }
}

/// List parameters of `GET /miniprogram/campaigns`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct CampaignListParams {
    /// 1-based page number; default 1.
    pub page: Option<i64>,
    /// Campaigns per page; default 20, at most 100.
    pub page_size: Option<i64>,
    /// Only campaigns in this status.
    pub status: Option<CampaignStatus>,
    /// `id` or `created_at`, `-` for descending; default `-id`.
    #[cfg_attr(feature = "openapi", param(schema_with = atrium_kernel::schema::sort::<crate::model::TaskSort>))]
    pub sort: Option<String>,
}

impl TryFrom<CampaignListParams> for CampaignQuery {
    type Error = Error;
    fn try_from(p: CampaignListParams) -> Result<Self, Error> {
        Ok(CampaignQuery { list: ListQuery::parse(p.page, p.page_size, None, p.sort.as_deref())?, status: p.status })
    }
}

/// List parameters of `GET /miniprogram/campaigns/{id}/tenants`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct CampaignTenantListParams {
    /// 1-based page number; default 1.
    pub page: Option<i64>,
    /// Tenants per page; default 20, at most 100.
    pub page_size: Option<i64>,
    /// Only tenants in this status.
    pub status: Option<CampaignTenantStatus>,
    /// Only this wave's tenants (0 for the first).
    #[cfg_attr(feature = "openapi", param(minimum = 0, maximum = 19))]
    pub wave: Option<u32>,
    /// `tenant_id` or `updated_at`, `-` for descending; default `tenant_id`.
    #[cfg_attr(feature = "openapi", param(schema_with = atrium_kernel::schema::sort::<CampaignTenantSort>))]
    pub sort: Option<String>,
}

impl TryFrom<CampaignTenantListParams> for CampaignTenantQuery {
    type Error = Error;
    fn try_from(p: CampaignTenantListParams) -> Result<Self, Error> {
        let list = ListQuery::parse(p.page, p.page_size, None, p.sort.as_deref())?;
        if let Some(w) = p.wave
            && w as usize >= MAX_WAVES
        {
            return Err(Error::invalid("wave", format!("must be between 0 and {}", MAX_WAVES - 1)));
        }
        Ok(CampaignTenantQuery { list, status: p.status, wave: p.wave })
    }
}

/// `POST /miniprogram/campaigns/{id}/retry`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"tenant_ids": [3, 7]})))]
pub struct CampaignRetry {
    /// Only these tenants; default every failed, rejected and pre-flight-failed tenant of the
    /// started waves.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<i64>>, min_items = 1, max_items = 100000))]
    pub tenant_ids: Option<Vec<Id>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wave(percent: Option<i64>, count: Option<i64>, release: WaveRelease) -> WaveInput {
        WaveInput { percent, count, release }
    }

    #[test]
    fn the_default_is_a_five_percent_canary_then_the_rest() {
        let waves = plan_waves(None).unwrap();
        assert_eq!(waves.len(), 2);
        assert_eq!(wave_take(&waves, 0, 50, 0), 3);
        assert_eq!(wave_take(&waves, 1, 50, 3), 47);
        assert_eq!(wave_take(&waves, 0, 3, 0), 1, "at least one");
        assert_eq!(wave_take(&waves, 1, 3, 1), 2);
    }

    #[test]
    fn waves_by_count_and_percent_take_their_share_and_the_last_takes_the_rest() {
        let waves = plan_waves(Some(&[
            wave(None, Some(5), WaveRelease::Gray { gray: 10 }),
            wave(Some(50), None, WaveRelease::Full),
            wave(Some(60), None, WaveRelease::Full),
        ]))
        .unwrap();
        assert_eq!(wave_take(&waves, 0, 50, 0), 5);
        assert_eq!(wave_take(&waves, 1, 50, 5), 20, "50 % of 50 is 25, less the 5 taken");
        assert_eq!(wave_take(&waves, 2, 50, 25), 25, "the last takes the rest");
        assert_eq!(wave_take(&waves, 0, 3, 0), 3, "never more than there are");
    }

    #[test]
    fn bad_waves_are_named_each() {
        let Err(Error::Invalid(errors)) = plan_waves(Some(&[
            wave(Some(50), None, WaveRelease::Full),
            wave(Some(40), None, WaveRelease::Gray { gray: 0 }),
            wave(Some(101), None, WaveRelease::Full),
            wave(Some(10), Some(3), WaveRelease::Full),
            wave(None, Some(0), WaveRelease::Full),
        ])) else {
            panic!("bad waves passed")
        };
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["waves[1].percent", "waves[1].release.gray", "waves[2].percent", "waves[3]", "waves[4].count"]);
        assert!(plan_waves(Some(&[])).is_err());
    }

    #[test]
    fn the_release_of_a_wave_reads_as_full_or_gray() {
        let full: WaveRelease = serde_json::from_str(r#""full""#).unwrap();
        assert_eq!(full, WaveRelease::Full);
        let gray: WaveRelease = serde_json::from_str(r#"{"gray": 10}"#).unwrap();
        assert_eq!(gray, WaveRelease::Gray { gray: 10 });
        assert_eq!(serde_json::to_string(&gray).unwrap(), r#"{"gray":10}"#);
        assert!(serde_json::from_str::<WaveRelease>(r#""gray""#).is_err());
        for also in [r#"{"gray": 10, "note": {}}"#, r#"{"gray": 10.0}"#] {
            assert_eq!(serde_json::from_str::<WaveRelease>(also).unwrap(), WaveRelease::Gray { gray: 10 }, "{also}");
        }
        for bad in [r#"{"gray": 300}"#, r#"{"gray": 1.5}"#, r#"{"gray": "10"}"#, r#"{}"#, "10"] {
            assert!(serde_json::from_str::<WaveRelease>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_selection_is_one_way_of_choosing() {
        let sel = |all: Option<bool>, partner_id: Option<Id>, tenant_ids: Option<Vec<Id>>| TenantSelection { all, partner_id, tenant_ids };
        assert_eq!(sel(Some(true), None, None).check().unwrap(), Selection::All);
        assert_eq!(sel(None, Some(3), None).check().unwrap(), Selection::Partner(3));
        assert_eq!(sel(None, None, Some(vec![2, 1])).check().unwrap(), Selection::Tenants(vec![2, 1]));
        assert!(sel(None, None, None).check().is_err());
        assert!(sel(Some(true), Some(3), None).check().is_err());
        assert!(sel(Some(false), None, None).check().is_err(), "false is no choice");
        assert_eq!(sel(Some(false), Some(3), None).check().unwrap(), Selection::Partner(3));
        assert!(sel(None, None, Some(vec![])).check().is_err());
        let Err(Error::Invalid(errors)) = sel(None, None, Some(vec![1, 0, 1])).check() else { panic!() };
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["tenants.tenant_ids[1]", "tenants.tenant_ids[2]"]);
    }

    #[test]
    fn ext_json_is_filled_in_per_tenant() {
        let template =
            serde_json::json!({"extAppid": "{authorizer_appid}", "ext": {"tenant": "t-{tenant_id}", "n": 1, "list": ["{tenant_id}"]}});
        let filled = ext_json_for(&template, 42, "wx42");
        assert_eq!(filled, serde_json::json!({"extAppid": "wx42", "ext": {"tenant": "t-42", "n": 1, "list": ["42"]}}));
    }

    #[test]
    fn settled_retryable_and_stepping_statuses() {
        use CampaignTenantStatus::*;
        for s in [PreflightFailed, Rejected, Released, Failed, Skipped] {
            assert!(s.is_settled(), "{s:?}");
        }
        for s in [Pending, Uploading, Auditing, Passed, Releasing] {
            assert!(!s.is_settled(), "{s:?}");
        }
        assert!(Failed.is_retryable() && Rejected.is_retryable() && PreflightFailed.is_retryable());
        assert!(!Released.is_retryable() && !Skipped.is_retryable());
        assert!(!Auditing.needs_step(), "waiting for the reviewers is not a step of ours");
    }
}

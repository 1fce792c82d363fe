-- Release campaigns: one template version shipped to many tenants' mini-programs in waves.
-- A campaign names its tenants when it is created (up to 100,000); each tenant's progress is
-- a row of mp_campaign_tenants. Every write of either is conditional on the revision read.
-- Timestamps are UTC.

-- waves is a JSON array of the waves (size, release, status, tenants taken); ext_json the
-- per-tenant ext_json template (a JSON object); domains and privacy the JSON of the settings
-- each tenant's pre-flight applies, when given. partner_id is the creator's partner (NULL: the
-- platform's campaign).
CREATE TABLE mp_campaigns (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL,
    partner_id BIGINT REFERENCES partners(id),
    status TEXT NOT NULL CHECK (status IN ('draft', 'running', 'paused', 'completed', 'cancelled')),
    template_id BIGINT NOT NULL,
    version TEXT NOT NULL,
    description TEXT NOT NULL,
    version_desc TEXT,
    ext_json TEXT NOT NULL,
    waves TEXT NOT NULL,
    current_wave INTEGER CHECK (current_wave >= 0),
    auto_advance BOOLEAN NOT NULL,
    max_rejections INTEGER NOT NULL CHECK (max_rejections >= 0),
    domains TEXT,
    privacy TEXT,
    paused_reason TEXT CHECK (paused_reason IN ('rejections', 'quota', 'manual', 'failures')),
    tenant_total INTEGER NOT NULL CHECK (tenant_total >= 0),
    created_by BIGINT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    started_at TIMESTAMP,
    finished_at TIMESTAMP,
    revision BIGINT NOT NULL
);
-- A partner's campaigns, newest first; every campaign by status.
CREATE INDEX mp_campaigns_partner_idx ON mp_campaigns(partner_id, id);
CREATE INDEX mp_campaigns_status_idx ON mp_campaigns(status, id);

-- A tenant of a campaign: the wave that took it (NULL before), its progress and the upload,
-- audit and release tasks of it. active is true while the campaign is running or paused (the
-- store sets it with the campaign's status, in the same transaction); the partial unique
-- index lets a tenant be active in one campaign at most, so two campaigns naming one tenant
-- cannot both start, even at the same moment on two instances.
CREATE TABLE mp_campaign_tenants (
    campaign_id BIGINT NOT NULL REFERENCES mp_campaigns(id) ON DELETE CASCADE,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id),
    authorizer_appid TEXT,
    wave INTEGER CHECK (wave >= 0),
    status TEXT NOT NULL CHECK (status IN ('pending', 'preflight_failed', 'uploading', 'auditing', 'passed', 'rejected',
        'releasing', 'released', 'failed', 'skipped')),
    upload_task_id BIGINT,
    audit_task_id BIGINT,
    release_task_id BIGINT,
    reason TEXT,
    errcode BIGINT,
    attempts INTEGER NOT NULL CHECK (attempts >= 0),
    next_at TIMESTAMP,
    updated_at TIMESTAMP NOT NULL,
    revision BIGINT NOT NULL,
    active BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (campaign_id, tenant_id)
);
CREATE UNIQUE INDEX mp_campaign_tenants_active_idx ON mp_campaign_tenants(tenant_id) WHERE active;
-- A wave's tenants and the counts per status (of a wave, and of the whole campaign); a
-- tenant's campaigns (and the foreign key's checks when a tenant is deleted).
CREATE INDEX mp_campaign_tenants_wave_idx ON mp_campaign_tenants(campaign_id, wave, status);
CREATE INDEX mp_campaign_tenants_status_idx ON mp_campaign_tenants(campaign_id, status);
CREATE INDEX mp_campaign_tenants_tenant_idx ON mp_campaign_tenants(tenant_id);

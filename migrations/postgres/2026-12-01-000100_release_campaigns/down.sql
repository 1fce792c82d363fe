DROP TABLE mp_campaign_tenants;
DROP TABLE mp_campaigns;

-- The built-in roles of API.md. Custom roles are added through /api/v1/roles.
INSERT INTO roles (id, code, name, party_type, builtin, permissions, created_at, updated_at) VALUES
 (1, 'platform_admin', 'Platform administrator', 'platform', TRUE, '["*"]', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP),
 (2, 'partner_admin', 'Partner administrator', 'partner', TRUE,
  '["user:*","agent:read","agent:update","tenant:*","employee:*","payroll:*","order:*","payment:*","miniprogram:*","role:*","audit:read","doc:*"]',
  CURRENT_TIMESTAMP, CURRENT_TIMESTAMP),
 (3, 'tenant_admin', 'Tenant administrator', 'tenant', TRUE,
  '["user:*","tenant:read","tenant:update","employee:*","payroll:*","order:*","payment:*","miniprogram:*","role:*","audit:read","doc:*"]',
  CURRENT_TIMESTAMP, CURRENT_TIMESTAMP),
 (4, 'payroll_clerk', 'Payroll clerk', 'tenant', TRUE,
  '["employee:read","payroll:read","payroll:create","payroll:update","payroll:calculate","payroll:send"]',
  CURRENT_TIMESTAMP, CURRENT_TIMESTAMP),
 (5, 'payroll_approver', 'Payroll approver', 'tenant', TRUE,
  '["employee:read","payroll:read","payroll:approve"]', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP),
 (6, 'finance', 'Finance', 'tenant', TRUE,
  '["order:*","payment:*","payroll:read","employee:read"]', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP),
 (7, 'viewer', 'Viewer', 'tenant', TRUE,
  '["user:read","tenant:read","employee:read","payroll:read","order:read","miniprogram:read"]', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP);
SELECT setval(pg_get_serial_sequence('roles', 'id'), 100);

// Compiled by scripts/clients.sh with `tsc --noEmit --strict` against api.d.ts, the types
// openapi-typescript generates from Atrium's OpenAPI document: what a TypeScript client may
// write must type-check, and what the server refuses must not. Each `@ts-expect-error` fails
// the compilation when the line after it does NOT error, so the second half is a real check.
import type { components } from "./api";

type NewOrder = components["schemas"]["NewOrder"];
type Tenant = components["schemas"]["Tenant"];

// Exactly the same type (not merely assignable, which `any` would be).
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

// ---- accepted --------------------------------------------------------------------------
// A platform or partner caller names the tenant.
export const byPlatform: NewOrder = { tenant_id: 1, subject: "Coffee", amount: 5 };
// A tenant caller may leave tenant_id out: the order is its own.
export const byTenant: NewOrder = { subject: "Coffee", amount: 5 };

// The tenant's payroll policy is typed, and four-eyes approval is a boolean.
export function fourEyes(tenant: Tenant): boolean {
  const policy = tenant.payroll_policy;
  return policy.four_eyes ?? true;
}
export const fourEyesIsBoolean: Equals<NonNullable<Tenant["payroll_policy"]["four_eyes"]>, boolean> = true;

// ---- refused ---------------------------------------------------------------------------
// @ts-expect-error: subject is required.
export const withoutSubject: NewOrder = { amount: 5 };
// @ts-expect-error: unknown fields are refused (the server answers 400).
export const withUnknownField: NewOrder = { tenant_id: 1, subject: "Coffee", amount: 5, colour: "red" };

DROP TABLE share_plans;

CREATE TABLE "usage_counts" (
	"scope" text NOT NULL,
	"name" text NOT NULL,
	"used" integer NOT NULL,
	CONSTRAINT "usage_counts_scope_name_pk" PRIMARY KEY("scope","name")
);

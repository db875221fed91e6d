CREATE TABLE "lb_placements" (
	"load_balancer_id" text NOT NULL,
	"node_id" text NOT NULL,
	CONSTRAINT "lb_placements_load_balancer_id_node_id_pk" PRIMARY KEY("load_balancer_id","node_id")
);
--> statement-breakpoint
ALTER TABLE "lb_placements" ADD CONSTRAINT "lb_placements_load_balancer_id_load_balancers_id_fk" FOREIGN KEY ("load_balancer_id") REFERENCES "public"."load_balancers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "lb_placements" ADD CONSTRAINT "lb_placements_node_id_nodes_id_fk" FOREIGN KEY ("node_id") REFERENCES "public"."nodes"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "lb_placements_node_idx" ON "lb_placements" USING btree ("node_id");
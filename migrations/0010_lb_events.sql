CREATE TABLE `lb_events` (
	`id` text PRIMARY KEY NOT NULL,
	`load_balancer_id` text NOT NULL,
	`kind` text NOT NULL,
	`at` text NOT NULL,
	`summary` text NOT NULL,
	`actor` text,
	`operation` text,
	`resource_id` text,
	`detail` text NOT NULL,
	FOREIGN KEY (`load_balancer_id`) REFERENCES `load_balancers`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `lb_events_lb_idx` ON `lb_events` (`load_balancer_id`,`id`);--> statement-breakpoint
CREATE INDEX `lb_events_lb_kind_idx` ON `lb_events` (`load_balancer_id`,`kind`,`id`);
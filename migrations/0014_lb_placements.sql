CREATE TABLE `lb_placements` (
	`load_balancer_id` text NOT NULL,
	`node_id` text NOT NULL,
	PRIMARY KEY(`load_balancer_id`, `node_id`),
	FOREIGN KEY (`load_balancer_id`) REFERENCES `load_balancers`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`node_id`) REFERENCES `nodes`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `lb_placements_node_idx` ON `lb_placements` (`node_id`);
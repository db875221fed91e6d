CREATE TABLE `usage_counts` (
	`scope` text NOT NULL,
	`name` text NOT NULL,
	`used` integer NOT NULL,
	PRIMARY KEY(`scope`, `name`)
);
--> statement-breakpoint
-- The counts a write is checked against (packages/db/src/schema/usage-counts.ts): each tenant's tenant-wide
-- quotas, and the fleet's listeners and L7 ports ('*'). Seeded from the rows, then kept by triggers in the
-- transaction of every insert, delete (cascades included) and L7 port change.
INSERT INTO `usage_counts` (`scope`, `name`, `used`)
  SELECT `tenant_id`, 'loadBalancers', count(*) FROM `load_balancers` GROUP BY `tenant_id`;
--> statement-breakpoint
INSERT INTO `usage_counts` (`scope`, `name`, `used`)
  SELECT `tenant_id`, 'listeners', count(*) FROM `listeners` GROUP BY `tenant_id`;
--> statement-breakpoint
INSERT INTO `usage_counts` (`scope`, `name`, `used`)
  SELECT `tenant_id`, 'servers', count(*) FROM `servers` GROUP BY `tenant_id`;
--> statement-breakpoint
INSERT INTO `usage_counts` (`scope`, `name`, `used`)
  SELECT `tenant_id`, 'certificates', count(*) FROM `certificates` GROUP BY `tenant_id`;
--> statement-breakpoint
INSERT INTO `usage_counts` (`scope`, `name`, `used`)
  SELECT `tenant_id`, 'acls', count(*) FROM `acls` GROUP BY `tenant_id`;
--> statement-breakpoint
INSERT INTO `usage_counts` (`scope`, `name`, `used`)
  SELECT '*', 'listeners', count(*) FROM `listeners` HAVING count(*) > 0;
--> statement-breakpoint
INSERT INTO `usage_counts` (`scope`, `name`, `used`)
  SELECT '*', 'l7Ports', count(`l7_port`) FROM `listeners` HAVING count(`l7_port`) > 0;
--> statement-breakpoint
CREATE TRIGGER `load_balancers_usage_insert` AFTER INSERT ON `load_balancers` BEGIN
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) VALUES (NEW.`tenant_id`, 'loadBalancers', 1)
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
END;
--> statement-breakpoint
CREATE TRIGGER `load_balancers_usage_delete` AFTER DELETE ON `load_balancers` BEGIN
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) VALUES (OLD.`tenant_id`, 'loadBalancers', -1)
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
END;
--> statement-breakpoint
CREATE TRIGGER `listeners_usage_insert` AFTER INSERT ON `listeners` BEGIN
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) VALUES (NEW.`tenant_id`, 'listeners', 1)
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) VALUES ('*', 'listeners', 1)
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) SELECT '*', 'l7Ports', 1 WHERE NEW.`l7_port` IS NOT NULL
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
END;
--> statement-breakpoint
CREATE TRIGGER `listeners_usage_delete` AFTER DELETE ON `listeners` BEGIN
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) VALUES (OLD.`tenant_id`, 'listeners', -1)
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) VALUES ('*', 'listeners', -1)
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) SELECT '*', 'l7Ports', -1 WHERE OLD.`l7_port` IS NOT NULL
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
END;
--> statement-breakpoint
CREATE TRIGGER `servers_usage_insert` AFTER INSERT ON `servers` BEGIN
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) VALUES (NEW.`tenant_id`, 'servers', 1)
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
END;
--> statement-breakpoint
CREATE TRIGGER `servers_usage_delete` AFTER DELETE ON `servers` BEGIN
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) VALUES (OLD.`tenant_id`, 'servers', -1)
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
END;
--> statement-breakpoint
CREATE TRIGGER `certificates_usage_insert` AFTER INSERT ON `certificates` BEGIN
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) VALUES (NEW.`tenant_id`, 'certificates', 1)
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
END;
--> statement-breakpoint
CREATE TRIGGER `certificates_usage_delete` AFTER DELETE ON `certificates` BEGIN
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) VALUES (OLD.`tenant_id`, 'certificates', -1)
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
END;
--> statement-breakpoint
CREATE TRIGGER `acls_usage_insert` AFTER INSERT ON `acls` BEGIN
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) VALUES (NEW.`tenant_id`, 'acls', 1)
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
END;
--> statement-breakpoint
CREATE TRIGGER `acls_usage_delete` AFTER DELETE ON `acls` BEGIN
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) VALUES (OLD.`tenant_id`, 'acls', -1)
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
END;
--> statement-breakpoint
CREATE TRIGGER `listeners_l7_port_usage` AFTER UPDATE OF `l7_port` ON `listeners`
  WHEN (OLD.`l7_port` IS NULL) <> (NEW.`l7_port` IS NULL) BEGIN
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) VALUES ('*', 'l7Ports', CASE WHEN NEW.`l7_port` IS NULL THEN -1 ELSE 1 END)
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
END;

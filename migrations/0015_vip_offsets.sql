DROP INDEX `load_balancers_pool_idx`;--> statement-breakpoint
ALTER TABLE `load_balancers` ADD `address_offset` integer;--> statement-breakpoint
CREATE INDEX `load_balancers_pool_idx` ON `load_balancers` (`address_pool_id`,`address_offset`);--> statement-breakpoint
-- Each address pool's count of load balancers with a VIP from it (scope: the pool's id, name: addresses), so
-- the allocator knows whether a pool's offsets are dense (count = highest + 1, the next VIP is highest + 1)
-- from one row and one index seek, where it read and parsed every VIP of the pool on every create. The API
-- fills address_offset for existing rows at its start (it parses the addresses).
INSERT INTO `usage_counts` (`scope`, `name`, `used`)
  SELECT `address_pool_id`, 'addresses', count(*) FROM `load_balancers` WHERE `address_pool_id` IS NOT NULL
  GROUP BY `address_pool_id`;
--> statement-breakpoint
CREATE TRIGGER `load_balancers_pool_usage_insert` AFTER INSERT ON `load_balancers`
WHEN NEW.`address_pool_id` IS NOT NULL BEGIN
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) VALUES (NEW.`address_pool_id`, 'addresses', 1)
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
END;
--> statement-breakpoint
CREATE TRIGGER `load_balancers_pool_usage_delete` AFTER DELETE ON `load_balancers`
WHEN OLD.`address_pool_id` IS NOT NULL BEGIN
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) VALUES (OLD.`address_pool_id`, 'addresses', -1)
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
END;
--> statement-breakpoint
CREATE TRIGGER `load_balancers_pool_usage_update` AFTER UPDATE OF `address_pool_id` ON `load_balancers`
WHEN OLD.`address_pool_id` IS NOT NEW.`address_pool_id` BEGIN
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) SELECT OLD.`address_pool_id`, 'addresses', -1
    WHERE OLD.`address_pool_id` IS NOT NULL
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
  INSERT INTO `usage_counts` (`scope`, `name`, `used`) SELECT NEW.`address_pool_id`, 'addresses', 1
    WHERE NEW.`address_pool_id` IS NOT NULL
    ON CONFLICT (`scope`, `name`) DO UPDATE SET `used` = `used` + excluded.`used`;
END;

import { sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { timestamps } from './columns.js';

export const tenants = sqliteTable('tenants', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  ...timestamps,
});

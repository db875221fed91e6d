import { pgTable, text } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';

export const tenants = pgTable('tenants', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  ...timestamps,
});

import { defineConfig } from 'drizzle-kit';

// PostgreSQL (preview, issue 23): the schema-pg mirror, migrations into the top-level migrations-pg/.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/schema-pg/index.ts',
  out: '../../migrations-pg',
});

-- The application's own migration in JdbcSchemaInitializationTest: Flyway must run it on an empty schema.
CREATE TABLE orders (id BIGINT PRIMARY KEY, total NUMERIC(12, 2) NOT NULL);

-- Admin is a role on the user. The user named admin, whom brain created on its first start, keeps it.
ALTER TABLE users ADD COLUMN is_admin BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE users SET is_admin = TRUE WHERE username = 'admin';

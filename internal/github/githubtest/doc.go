// Package githubtest is a fake GitHub REST API for tests: an httptest server
// that answers the paths and JSON shapes the real go-github client uses, backed
// by a real git repository the test builds with Repo, so blob shas, renames,
// merges and force-pushes are the ones git computes.
//
// Build a repository, serve it, point go-github at Server.URL:
//
//	repo := githubtest.NewRepo(t)
//	repo.Write("규정/학칙 (2024).md", "# 학칙\n")
//	head := repo.Commit("add")
//	srv := githubtest.NewServer(t, "knue", "policies", repo)
//	client, _ := github.NewClient(nil).WithEnterpriseURLs(srv.URL(), srv.URL())
//
// Served (endpoint kind in parentheses, as counted by Server.Requests):
//
//	GET /repos/{o}/{r}/commits/{ref}           ("commit-sha" with Accept application/vnd.github.v3.sha, else "commit":
//	                                           with the files changed from the first parent, 300 a page
//	                                           (Link rel="next"), 3,000 in all, shaped as compare's)
//	GET /repos/{o}/{r}/branches/{branch}       ("branch")
//	GET /repos/{o}/{r}/git/trees/{sha}         ("tree"; ?recursive=1, cut at GitHub's 100,000 entries or 7 MB; Server.TruncateTreesOver, TruncateTreesOverBytes)
//	GET /repos/{o}/{r}/compare/{base}...{head} ("compare"; files from the merge base, at most 300;
//	                                           as GitHub: sha null for a change of mode only,
//	                                           blob_url/raw_url null for a submodule;
//	                                           Server.CompareWithoutFiles leaves files out)
//	GET /repos/{o}/{r}/git/blobs/{sha}         ("blob"; JSON base64 or raw with Accept application/vnd.github.v3.raw)
//	GET /repos/{o}/{r}/tarball/{ref}           ("archive-link"; 302 to the download below)
//	GET /_codeload/{o}/{r}/tar.gz/{sha}        ("archive"; git archive --prefix={o}-{r}-{sha7}/)
//
// Raw blobs and tarballs are streamed, never held whole, so a test can serve
// a file larger than it would keep in memory (Repo.WriteFrom with Fill), and
// Server.ArchiveExtra adds generated entries to the tarball (a gzip bomb).
//
// Faults are injected per endpoint kind with FailNext (the next n requests)
// or FailRandom (seeded, deterministic), using the constructors
// PrimaryRateLimit, SecondaryRateLimit, ServerError, StatusError, Hang and
// Stall. Every request is counted (Requests), its body bytes too
// (BytesSent), and logged (Log).
//
// When Server.Token is set, API requests must carry "Authorization: Bearer
// {token}" (or "token {token}"): a missing header answers 404 as GitHub does
// for a private repository, a wrong one 401 "Bad credentials". The download
// URL is not checked, like GitHub's pre-signed codeload links.
package githubtest

// A stand-in verbs library that exports the data path, as one whose verbs.h declares
// ibv_post_send & co. extern would (rdma-core's are static inlines). Each returns a marker so
// that comm/transport/verbs/ibverbs_api_test.cc sees which entry point was called.
// No verbs.h here: its inline definitions would clash with these.
extern "C" {
int ibv_post_send(void*, void*, void**) { return 101; }
int ibv_post_recv(void*, void*, void**) { return 102; }
int ibv_poll_cq(void*, int num_entries, void*) { return 1000 + num_entries; }
int ibv_req_notify_cq(void*, int solicited_only) { return 104 + solicited_only; }
}

// Minimal QEMU TCG plugin (API version 1, QEMU 7.2): counts executed guest instructions.
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*tb_trans_cb)(qemu_plugin_id_t, struct qemu_plugin_tb*);
typedef void (*udata_cb)(qemu_plugin_id_t, void*);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, tb_trans_cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb*);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb*, enum qemu_plugin_op, void*, uint64_t);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, udata_cb, void*);
__attribute__((visibility("default"))) int qemu_plugin_version = 1;
static uint64_t count;
static void trans(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &count, qemu_plugin_tb_n_insns(tb));
}
static void done(qemu_plugin_id_t id, void* p) { fprintf(stderr, "guest instructions: %llu\n", (unsigned long long)count); }
__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info_t* info, int argc, char** argv) {
  qemu_plugin_register_vcpu_tb_trans_cb(id, trans);
  qemu_plugin_register_atexit_cb(id, done, NULL);
  return 0;
}

// An ArrayBuffer over memory this addon owns, of any length. N-API's napi_create_external_arraybuffer
// goes through Node's Buffer and stops at 4 GiB; a memory map of a larger .npy needs V8's own
// external backing store. The handle is handed back as a napi_value the way Node itself converts
// V8 handles (a napi_value is a pointer to the handle's slot in the current scope).
#include <memory>
#include <node_api.h>
#include <v8.h>

namespace {
struct Release {
  void (*release)(void *hint);
  void *hint;
};

void Deleter(void *, size_t, void *data) {
  // V8 may call this on any thread; munmap and free are thread-safe.
  Release *r = static_cast<Release *>(data);
  r->release(r->hint);
  delete r;
}
}  // namespace

extern "C" napi_value npyts_large_external_arraybuffer(void *data, size_t length, void (*release)(void *hint), void *hint) {
  v8::Isolate *isolate = v8::Isolate::GetCurrent();
  Release *r = new Release{release, hint};
  std::unique_ptr<v8::BackingStore> store = v8::ArrayBuffer::NewBackingStore(data, length, Deleter, r);
  v8::Local<v8::ArrayBuffer> buffer = v8::ArrayBuffer::New(isolate, std::move(store));
  return reinterpret_cast<napi_value>(*buffer);
}

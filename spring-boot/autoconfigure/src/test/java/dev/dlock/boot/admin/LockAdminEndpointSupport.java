package dev.dlock.boot.admin;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/** What the endpoint tests share: the HTTP calls, and a lock held on a named thread by the application's manager. */
abstract class LockAdminEndpointSupport {

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @LocalServerPort
    int port;

    @Autowired
    LockManager lockManager;

    HttpResponse<String> call(String method, String path) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                .method(method, HttpRequest.BodyPublishers.noBody()).timeout(Duration.ofSeconds(10)).build();
        return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
    }

    /** Lock {@code name}'s {@code key} taken as the aspect takes it ({@code <name>:<key>}) on a thread called {@code threadName}. */
    LockHandle holdOn(String threadName, String name, String key) throws InterruptedException {
        return holdOn(threadName, LockRequest.builder(name + ":" + key).name(name).build());
    }

    /** {@code request} acquired on a thread called {@code threadName}. */
    LockHandle holdOn(String threadName, LockRequest request) throws InterruptedException {
        AtomicReference<LockHandle> handle = new AtomicReference<>();
        Thread thread = new Thread(() -> handle.set(lockManager.acquire(request)), threadName);
        thread.start();
        thread.join(10_000);
        assertThat(handle.get()).as("%s holds %s", threadName, request.key()).isNotNull();
        return handle.get();
    }
}

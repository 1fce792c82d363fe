//! Slow clients: a request body must arrive within the body timeout of its head, or the
//! request is answered 408 and the connection closed. (A slow head is actix's client request
//! timeout; a body over the limit is refused from its `Content-Length` by the extractors before
//! anything is read, and the connection closed rather than drained.)
use actix_web::body::{BoxBody, EitherBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::PayloadError;
use actix_web::http::StatusCode;
use actix_web::http::header;
use actix_web::middleware::Next;
use actix_web::web::{self, Bytes};
use actix_web::{Error, HttpMessage};
use atrium_kernel::Reason;
use futures_core::Stream;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::app::AppState;
use crate::envelope::respond;
use crate::error::ErrorData;

/// A request body cut off at a deadline: past it the stream ends in an error and `fired` is set.
struct Deadline {
    inner: Payload,
    sleep: Pin<Box<actix_web::rt::time::Sleep>>,
    fired: Rc<AtomicBool>,
    done: bool,
}

impl Stream for Deadline {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_next(cx) {
            Poll::Ready(None) => {
                self.done = true;
                return Poll::Ready(None);
            }
            Poll::Ready(Some(item)) => return Poll::Ready(Some(item)),
            Poll::Pending => {}
        }
        if self.sleep.as_mut().poll(cx).is_ready() {
            self.done = true;
            self.fired.store(true, Ordering::Relaxed);
            // Dropping the unread body makes the server close the connection after answering.
            self.inner = Payload::None;
            return Poll::Ready(Some(Err(PayloadError::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the request body did not arrive in time",
            )))));
        }
        Poll::Pending
    }
}

/// Gives a request with a body `body_timeout` to deliver it; a request whose body ran out of
/// time is answered 408 and its connection closed, whatever the handler made of the cut body.
pub async fn body_timeout(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody, BoxBody>>, Error> {
    let timeout = req.app_data::<web::Data<AppState>>().map(|s| s.body_timeout).unwrap_or(Duration::ZERO);
    let has_body = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).is_some_and(|v| v.trim() != "0")
        || req.headers().contains_key(header::TRANSFER_ENCODING);
    if timeout.is_zero() || !has_body {
        return Ok(next.call(req).await?.map_into_left_body());
    }
    let fired = Rc::new(AtomicBool::new(false));
    let inner = req.take_payload();
    let deadline = Deadline { inner, sleep: Box::pin(actix_web::rt::time::sleep(timeout)), fired: fired.clone(), done: false };
    let boxed: Pin<Box<dyn Stream<Item = Result<Bytes, PayloadError>>>> = Box::pin(deadline);
    req.set_payload(Payload::from(boxed));
    let res = next.call(req).await?;
    if !fired.load(Ordering::Relaxed) {
        return Ok(res.map_into_left_body());
    }
    log::info!("request body not received within {timeout:?}; answering 408 and closing the connection");
    let (req, _) = res.into_parts();
    let mut resp = respond(
        StatusCode::REQUEST_TIMEOUT,
        408,
        &format!("the request body did not arrive within {} ms", timeout.as_millis()),
        ErrorData::for_path(req.path(), Reason::RequestTimeout),
    );
    resp.head_mut().set_connection_type(actix_web::http::ConnectionType::Close);
    Ok(ServiceResponse::new(req, resp).map_into_right_body())
}

/// A request whose `Content-Length` is over `limit` is answered 413 before any extractor runs
/// (the token check included, which would otherwise race the body's own check), and its
/// connection closed rather than drained.
pub async fn declared_over(
    limit: usize,
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody, BoxBody>>, Error> {
    let declared = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_none_or(|n| n <= limit as u64) {
        return Ok(next.call(req).await?.map_into_left_body());
    }
    let mut resp = respond(
        StatusCode::PAYLOAD_TOO_LARGE,
        413,
        &format!("request body is larger than {limit} bytes"),
        ErrorData::for_path(req.path(), Reason::TooLarge),
    );
    resp.head_mut().set_connection_type(actix_web::http::ConnectionType::Close);
    Ok(req.into_response(resp).map_into_right_body())
}
